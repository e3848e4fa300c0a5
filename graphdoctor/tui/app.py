"""graphdoctor's terminal UI: a report, explored. One screen per question (summary, findings,
timeline, allocations, graphs), switched with the number keys or the first letters; ``?``
lists every key, ``/`` searches, ``q`` quits.

The app is built from a :class:`~graphdoctor.report.document.Report` object, never a path,
so it runs on any machine (no GPU, no torch) and tests hand it recorded reports.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from textual import work
from textual.app import App
from textual.binding import Binding, BindingType
from textual.filter import LineFilter

from graphdoctor.report.document import Report
from graphdoctor.tui.report_view import ReportView
from graphdoctor.tui.safe_text import ShowControls
from graphdoctor.tui.screens.allocations import AllocationsScreen
from graphdoctor.tui.screens.findings import FindingsScreen
from graphdoctor.tui.screens.graphs import GraphsScreen
from graphdoctor.tui.screens.help import HelpScreen, binding_lines
from graphdoctor.tui.screens.summary import SummaryScreen
from graphdoctor.tui.screens.timeline import TimelineScreen
from graphdoctor.tui.search import SearchPalette
from graphdoctor.tui.widgets.mode_bar import MODES
from graphdoctor.tui.widgets.timeline import Timeline

SHOW_CONTROLS = ShowControls()  # one instance: Textual caches filtered lines per filter
SHORTCUTS = {"summary": "s", "findings": "f", "timeline": "t", "allocations": "a", "graphs": "g"}


def _mode_bindings() -> list[BindingType]:
    return [Binding(f"{number},{SHORTCUTS[mode]}", f"switch_mode('{mode}')", title, show=False)
            for number, (mode, title) in enumerate(MODES, 1)]


class GraphDoctorApp(App[None]):
    """Explore one graphdoctor report."""

    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute, so subclasses elsewhere work
    TITLE = "graphdoctor"
    MODES: ClassVar[dict[str, Any]] = {
        "summary": SummaryScreen,
        "findings": FindingsScreen,
        "timeline": TimelineScreen,
        "allocations": AllocationsScreen,
        "graphs": GraphsScreen,
    }
    DEFAULT_MODE = "summary"
    BINDINGS: ClassVar[list[BindingType]] = [
        *_mode_bindings(),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("slash", "search", "Search", key_display="/"),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(self, report: Report, name: str = "") -> None:
        super().__init__()
        self.view = ReportView(report, name)
        self.sub_title = self.view.name
        self._targets: dict[str, Any] = {}

    def on_mount(self) -> None:
        self.call_after_refresh(self._prepare_timeline)

    def get_line_filters(self) -> Sequence[LineFilter]:
        """Textual's filters, and one that shows, rather than sends, any control character
        from the report (see :mod:`graphdoctor.tui.safe_text`)."""
        return [*super().get_line_filters(), SHOW_CONTROLS]

    @work(thread=True, exclusive=True, group="prepare")
    def _prepare_timeline(self) -> None:
        """Index the timeline while the user reads the summary: on a big run that takes
        a noticeable moment, which should not be spent after they press 3."""
        self.view.prepare_timeline()

    def go_to(self, mode: str, target: Any) -> None:
        """Open ``mode``'s screen showing ``target``: a finding's index, an event, a graph."""
        self._targets[mode] = target
        if self.current_mode != mode:
            self.switch_mode(mode)
        else:  # the screen is open (perhaps under the search palette): hand it over after
            self.call_after_refresh(self._deliver, mode)

    def _deliver(self, mode: str) -> None:
        target = self.take_target(mode)
        if target is not None and hasattr(self.screen, "reveal"):
            self.screen.reveal(target)

    def take_target(self, mode: str) -> Any:
        return self._targets.pop(mode, None)

    def crash_summary(self) -> str:
        """The exception that ended the app, in one line. Textual keeps it in a private
        attribute (for its test harness), so it is read with care."""
        error = getattr(self, "_exception", None)
        if not isinstance(error, BaseException):
            return "an unhandled error"
        message = str(error).strip().splitlines()
        return f"{type(error).__name__}: {message[0]}" if message else type(error).__name__

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            return
        self.push_screen(HelpScreen(help_sections()))

    def action_search(self) -> None:
        self.push_screen(SearchPalette())


def help_sections() -> list[tuple[str, list[tuple[str, str]]]]:
    everywhere = [(f"{n} {SHORTCUTS[mode]}", title) for n, (mode, title) in enumerate(MODES, 1)]
    return [
        ("Everywhere", everywhere + binding_lines(GraphDoctorApp.BINDINGS[len(MODES):])),
        ("Timeline", binding_lines(Timeline.BINDINGS)),
        ("Findings", [("↑ ↓", "choose a finding"), *binding_lines(FindingsScreen.BINDINGS),
                      ("tab", "move between the list and the evidence")]),
        ("Allocations", [*binding_lines(AllocationsScreen.BINDINGS),
                         ("enter", "show the group's largest allocation on the timeline")]),
        ("Graphs", binding_lines(GraphsScreen.BINDINGS)),
    ]
