"""The viewer live: a recording shown while it is being made, as ``graphdoctor run --live``
and ``graphdoctor view --follow`` open it.

A :class:`~graphdoctor.report.live.LiveFeed` reads what the spools gained (only that: a long
run is not read again every second) and gives the report of all they hold. About once a
second, off the UI thread, the app asks it, and when it has grown the screen on show is
built again on the new report, back where the user was (its cursor, its list's highlight,
the timeline's window; a window that showed the whole run goes on showing all of it).
Another screen catches up when it is next shown; the screen on show waits while a box is
over it or its filter is being typed into. A look that takes long (a huge run) spaces the
next ones out: never more than a third of the time is spent looking.

When the recording ends, the finished report takes the live one's place in the same way:
``run --live`` hands over the report it wrote (:meth:`LiveApp.finish`); ``view --follow``
shows the report of the complete spool. The app runs in graphdoctor's own process, never
in the recorded one.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import threading
import time
from pathlib import Path

from textual import events, work
from textual.app import ScreenStackError, UnknownModeError
from textual.binding import Binding
from textual.widgets import Input

from graphdoctor.files.untrusted import TooLarge
from graphdoctor.report.document import Report
from graphdoctor.report.live import LiveFeed
from graphdoctor.trace.model import Trace
from graphdoctor.tui.app import GraphDoctorApp
from graphdoctor.tui.live_facts import LiveFacts
from graphdoctor.tui.report_view import ReportView
from graphdoctor.tui.screens.base import ReportScreen
from graphdoctor.tui.widgets.mode_bar import ModeBar

EVERY_S = 1.0  # how often the spools are read
SPARE = 3.0  # a look may take at most a third of the time between looks
TICK_S = 0.25  # how often the app asks whether a look is due


class LiveApp(GraphDoctorApp):
    """The app on a :class:`LiveFeed`: ``following`` names what it reads, ``output`` where
    the script's output goes ("" for a spool another process writes)."""

    BINDINGS = [Binding("ctrl+c", "stop_script", "Stop the script (as Ctrl-C would)",
                        show=False)]

    def __init__(self, feed: LiveFeed, name: str, *, following: str, output: str = "",
                 stops_script: bool = False) -> None:
        self.feed = feed
        self.stops_script = stops_script
        self.facts = LiveFacts(following, output, every_s=EVERY_S)
        self.base_name = name
        self._stopped = False  # the run's report handed over, or the spool unreadable
        self._lock = threading.Lock()
        self._looking = False
        self._looked_at = 0.0
        self._cost_s = 0.0  # what the last look took, the new view laid out included
        self._said = ""  # the start of a line graphdoctor is writing
        first = self._first_look()
        super().__init__(first or Report(Trace()), self._named(), live=self.facts)
        self.sub_title = self._named()

    def _first_look(self) -> Report | None:
        try:
            report = self.feed.look()
        except Exception:  # noqa: BLE001 - said by the app's first look, which meets it again
            return None
        self._looked_at = time.monotonic()
        self.facts = self._facts_now()
        return report

    def on_mount(self) -> None:
        super().on_mount()
        self.set_interval(TICK_S, self._tick)
        if self.stops_script:  # graphdoctor's own lines on the run (the terminal is the view's)
            self.begin_capture_print(self, stdout=False, stderr=True)

    def on_print(self, event: events.Print) -> None:
        """A line graphdoctor writes while the view is open (the script kept running after
        Ctrl-C, what it left running): said in the view, whole lines only."""
        self._said += event.text
        *lines, self._said = self._said.split("\n")
        for line in filter(None, (line.strip() for line in lines)):
            self.notify(line.removeprefix("graphdoctor: "), timeout=10)

    # -- looking ------------------------------------------------------------------------------
    def _tick(self) -> None:
        if self._leaving or not self.is_running:
            return  # the app is closing: its screens are going
        self._catch_up()
        if self._stopped or self._looking or self.feed.ended and self._shown_ended():
            return
        if time.monotonic() - self._looked_at < max(EVERY_S, SPARE * self._cost_s):
            self._show_clock()
            return
        self._looking = True
        self._look()

    def _shown_ended(self) -> bool:
        return self.view.live is not None and self.view.live.ended

    @work(thread=True, exclusive=True, group="live", exit_on_error=False)
    def _look(self) -> None:
        start = time.perf_counter()
        try:
            report = self.feed.look()
            with self._lock:
                view = None if report is None or self._stopped else self._view_of(report)
        except (OSError, TooLarge) as error:
            self.call_from_thread(self._cannot_read, str(error))
            return
        except Exception as error:  # noqa: BLE001 - a bug here stops the looks, not the view
            self.call_from_thread(self._cannot_read, f"{type(error).__name__}: {error}")
            return
        finally:
            self._cost_s = time.perf_counter() - start
            self._looked_at, self._looking = time.monotonic(), False
        if view is not None:
            self.call_from_thread(self._show, view)

    def _view_of(self, report: Report) -> ReportView:
        """The view of the new report, its timeline laid out here, off the UI thread, as
        the app's first view's is."""
        self.facts = self._facts_now()
        view = ReportView(report, self._named(), self.facts)
        view.prepare_timeline()
        return view

    def _facts_now(self) -> LiveFacts:
        ended = self.feed.ended
        report = self.facts.following if ended and not self.facts.output else ""
        return dataclasses.replace(self.facts, ended=ended, report=report,
                                   running_ns=self._running_ns())

    def _running_ns(self) -> int:
        report = self.feed.report
        return report.trace.status.wall_ns if report is not None else 0

    def _named(self) -> str:
        return self.facts.report or self.base_name

    # -- showing ------------------------------------------------------------------------------
    def _show(self, view: ReportView) -> None:
        if self._leaving:
            return
        self.view = view
        self.sub_title = view.name
        self._catch_up()

    def _catch_up(self) -> None:
        """The screen on show, built on the latest report, unless a box is over it or its
        filter is being typed into (it catches up once they are done)."""
        try:
            screen = self.screen
        except (ScreenStackError, UnknownModeError):  # the app closes: none is shown
            return
        if isinstance(screen, ReportScreen) and screen.view is not self.view \
                and not isinstance(self.focused, Input):
            self.call_later(screen.show_view, self.view)

    def _show_clock(self) -> None:
        """The bar's ``● live 42 s`` on time between reports (a quiet script), for a run
        graphdoctor runs; a spool from elsewhere is as long as its records say."""
        if not self.feed.own or self.facts.ended or self.facts.report or self.feed.report is None:
            return
        running = self.facts.running_ns + int((time.monotonic() - self._looked_at) * 1e9)
        badge = dataclasses.replace(self.facts, running_ns=running).badge
        for bar in self.screen.query(ModeBar):
            bar.show_badge(badge)

    def _cannot_read(self, why: str) -> None:
        self.notify(f"The recording cannot be read any more ({why}); what was read stays "
                    "on show.", severity="error", timeout=10)
        self._stopped = True

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "stop_script":  # only where graphdoctor runs it; else Textual's ctrl+c
            return self.stops_script and not self._stopped
        return super().check_action(action, parameters)

    def action_stop_script(self) -> None:
        """Ctrl-C: the terminal is the view's, so the key is sent on as the signal it would
        have been; graphdoctor passes it to the script as ever."""
        os.kill(os.getpid(), signal.SIGINT)
        self.notify("Ctrl-C passed on to the script", timeout=4)

    def finish(self, report: Report, path: Path | str) -> None:
        """The run's finished report, written to ``path``, in the live one's place."""
        with self._lock:
            self._stopped = True
            self.facts = dataclasses.replace(self.facts, ended=True, report=str(path))
            view = ReportView(report, str(path), self.facts)
        self._show(view)
        self.notify(f"The run has ended: its report is {path}", timeout=8)
