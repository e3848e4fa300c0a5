"""Timeline: what happened when. Lanes for the phases, the CPU threads, collectives, each
CUDA stream, memory, syncs, compile events and GPU utilisation (a group of them per rank in a
distributed run); a status line that says where the cursor is; and the details of the
selected event, with its stack and the user's source line."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Footer, Static

from graphdoctor.report.facts import clean
from graphdoctor.tui.events import EventRef
from graphdoctor.tui.rendering import details_view
from graphdoctor.tui.screens.base import ReportScreen
from graphdoctor.tui.screens.help import binding_lines
from graphdoctor.tui.timeline_view import TimelineState
from graphdoctor.tui.units import format_duration, format_moment
from graphdoctor.tui.widgets.timeline import Timeline

HINT = ("←/→ move · ↑/↓ lane · +/- zoom · 0 whole run · n/N next/previous event on the lane · "
        "enter details · z zoom to phase · click selects, wheel zooms · ? help")
RANKS_HINT = ("\nEach rank has its lanes (r0, r1…), on one time axis: each rank's times count from "
              "its own start, which the launcher makes nearly the same moment. "
              "[/] same lane on the previous/next rank.")
RANKS_STATUS = "· times from each rank's start"


class TimelineScreen(ReportScreen):
    @classmethod
    def key_help(cls) -> list[tuple[str, str]]:
        return binding_lines(Timeline.BINDINGS)  # the timeline widget's: the screen has none

    def compose(self) -> ComposeResult:
        yield self.mode_bar()
        yield Timeline(self.view.lanes, self.view.limits, id="timeline")
        yield Static(id="timeline-status")
        with VerticalScroll(id="event-detail"):
            yield Static(self.hint(), id="event-text")
        yield Footer()

    @property
    def timeline(self) -> Timeline:
        return self.query_one(Timeline)

    def on_mount(self) -> None:
        self.timeline.focus()
        self.call_after_refresh(self._show_status)

    def _show_status(self) -> None:
        self.query_one("#timeline-status", Static).update(self.status_text(self.timeline.state))

    def reveal(self, ref: EventRef) -> None:
        """Select the event ``ref`` and bring it into view."""
        span = self.view.span_of(ref)
        if span is None or not self.timeline.reveal(ref, *span):
            self.notify(f"{ref} is not on the timeline.", severity="warning", timeout=3)
        self.timeline.focus()

    def on_timeline_changed(self, message: Timeline.Changed) -> None:
        self.query_one("#timeline-status", Static).update(self.status_text(message.state))

    def on_timeline_selected(self, message: Timeline.Selected) -> None:
        pane = self.query_one("#event-text", Static)
        if message.ref is None:
            pane.update(self.hint())
        else:
            pane.update(details_view(self.view, self.view.describe(message.ref)))
        self.query_one("#event-detail").scroll_home(animate=False)

    def hint(self) -> Text:
        return Text(HINT + (RANKS_HINT if self.view.multi_rank else ""), style="dim")

    def status_text(self, state: TimelineState) -> Text:
        """Where the cursor is, in which phase (of the lane's rank), on which lane, and what
        the window covers."""
        width = self.timeline.plot_width
        step = max(state.window.span // max(width, 1), 1)
        lane = self.view.lanes[state.lane]
        text = Text()
        text.append(f" {format_moment(state.cursor, step)} ", style="bold reverse")
        text.append(clean(f" {self.view.phase_at(state.cursor, lane.rank)} "), style="bold")
        text.append(clean(f"· {lane.label.strip()} "), style="")
        text.append(f"· {format_moment(state.window.start, step)} – "
                    f"{format_moment(state.window.end, step)} "
                    f"({format_duration(state.window.span)}, {format_duration(step)}/col)",
                    style="dim")
        if self.view.multi_rank:  # last, so a narrow terminal cuts it rather than the times
            text.append(f" {RANKS_STATUS}", style="dim")
        return text
