"""graphdoctor's terminal UI: a report, explored. One screen per question, each opened by
its number or its letter (:data:`SCREENS` lists them); ``?`` lists every key, ``/``
searches, ``q`` quits. A screen asks for another with a message of
:mod:`graphdoctor.tui.navigation`, and the app opens it.

The app is built from a :class:`~graphdoctor.report.document.Report` object, never a path,
so it runs on any machine (no GPU, no torch) and tests hand it recorded reports. A screen's
module is imported when the screen is first shown (the help's and the search's too), so the
first frame waits only for the Summary's; each screen, once built, is kept for the next visit
as it was left (Textual's modes).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import ClassVar, TypeVar

from rich.console import RenderableType
from textual import events, work
from textual.app import App, UnknownModeError
from textual.binding import Binding, BindingType
from textual.filter import LineFilter, Monochrome, NoColor
from textual.widgets import Input

from graphdoctor.report.document import Report
from graphdoctor.tui.live_facts import LiveFacts
from graphdoctor.tui.navigation import GoToScreen, ShowEvent, ShowFinding, ShowGraph
from graphdoctor.tui.palette import ANSI_THEME
from graphdoctor.tui.report_view import ReportView
from graphdoctor.tui.safe_text import GiveStyle, ShowControls
from graphdoctor.tui.screens.base import ReportScreen, ScreenEntry
from graphdoctor.tui.search_hits import HIT_KEYS, SEARCH_ACTIONS, SearchChosen, SearchHits

SHOW_CONTROLS = ShowControls()  # one instance: Textual caches filtered lines per filter
GIVE_STYLE = GiveStyle()
SCREENS_AT = "graphdoctor.tui.screens"

SCREENS = (
    ScreenEntry("summary", "s", "Summary", f"{SCREENS_AT}.summary:SummaryScreen"),
    ScreenEntry("findings", "f", "Findings", f"{SCREENS_AT}.findings:FindingsScreen",
                counted=True),
    ScreenEntry("timeline", "t", "Timeline", f"{SCREENS_AT}.timeline:TimelineScreen"),
    ScreenEntry("allocations", "a", "Allocations", f"{SCREENS_AT}.allocations:AllocationsScreen"),
    ScreenEntry("graphs", "g", "Graphs", f"{SCREENS_AT}.graphs:GraphsScreen"),
)
"""The app's screens, in the order of their number keys and of the bar on top. The one list
of them: the modes, the keys, the bar and the help are all made from it."""

APP_KEYS: list[BindingType] = [
    Binding("question_mark,f1", "help", "Help", key_display="?"),
    Binding("escape,backspace", "go_back", "Back", show=False),
    Binding("slash", "search", "Search", key_display="/"),
    Binding("ctrl+f", "search", "Search, also where / filters a table", show=False),
    Binding("q", "quit", "Quit"),
]

ScreenT = TypeVar("ScreenT", bound=ReportScreen)
MOST_TRAIL = 3  # screens of the way back shown in the header


def _screen_keys() -> list[BindingType]:
    return [Binding(f"{number},{entry.key}", f"switch_mode('{entry.name}')", entry.title,
                    show=False) for number, entry in enumerate(SCREENS, 1)]


class GraphDoctorApp(App[None]):
    """Explore one graphdoctor report."""

    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute, so subclasses elsewhere work
    TITLE = "graphdoctor"
    DEFAULT_MODE = SCREENS[0].name
    BINDINGS: ClassVar[list[BindingType]] = [*_screen_keys(), *HIT_KEYS, *APP_KEYS]

    def __init__(self, report: Report, name: str = "", live: LiveFacts | None = None) -> None:
        super().__init__()
        self.ansi_theme_dark = ANSI_THEME  # red, magenta and their bright twins told apart
        self.view = ReportView(report, name, live)
        self.sub_title = self.view.name
        self._leaving = False  # quit was asked: what is still queued opens nothing
        self._jumps: list[str] = []  # the screens jumps came from, the last one last
        self.search_hits = SearchHits(self)  # the last search's, for n and N
        for entry in SCREENS:  # modes of this instance, not the class: built on its view
            self.add_mode(entry.name, partial(self._build, entry))

    def _build(self, entry: ScreenEntry) -> ReportScreen:
        """A screen of the app's view as it is when the screen is first shown (a live
        view's changes)."""
        return entry.build(self.view, SCREENS)

    def on_mount(self) -> None:
        self.call_after_refresh(self._prepare_timeline)

    def exit(self, result: None = None, return_code: int = 0,
             message: RenderableType | None = None) -> None:
        """Leave; keys typed after ``q`` and still queued are dropped from here on: a screen
        one of them opened would mount while the app is torn down, and fail there."""
        self._leaving = True
        super().exit(result, return_code, message)

    async def on_event(self, event: events.Event) -> None:
        # Also once Textual has begun shutting down by another way than quit (a test
        # harness, a signal): a key queued then would act on screens already gone.
        shutting_down = not getattr(self, "_running", True)
        if isinstance(event, events.Key) and (self._leaving or shutting_down):
            return
        await super().on_event(event)

    def get_line_filters(self) -> Sequence[LineFilter]:
        """Textual's filters, and one that shows, rather than sends, any control character
        from the report (see :mod:`graphdoctor.tui.safe_text`); before NO_COLOR's, one
        that gives each segment a style, which that filter needs."""
        filters = [*super().get_line_filters(), SHOW_CONTROLS]
        return [given for each in filters for given in
                ((GIVE_STYLE, each) if isinstance(each, Monochrome | NoColor) else (each,))]

    @work(thread=True, exclusive=True, group="prepare")
    def _prepare_timeline(self) -> None:
        """Index the timeline while the user reads the summary: on a big run that takes
        a noticeable moment, which should not be spent after they press 3."""
        self.view.prepare_timeline()

    # -- where the screens' messages lead -----------------------------------------------------
    def on_go_to_screen(self, message: GoToScreen) -> None:
        if not self._leaving:
            self._switch(message.name)

    def on_show_finding(self, message: ShowFinding) -> None:
        from graphdoctor.tui.screens.findings import FindingsScreen

        findings = None if self._leaving else self._open(FindingsScreen)
        if findings is not None:
            findings.call_later(findings.reveal, message.index)

    def on_show_graph(self, message: ShowGraph) -> None:
        from graphdoctor.tui.screens.graphs import GraphsScreen

        graphs = None if self._leaving else self._open(GraphsScreen)
        if graphs is not None:
            graphs.call_later(graphs.reveal, message.key)

    def on_show_event(self, message: ShowEvent) -> None:
        from graphdoctor.tui.screens.timeline import TimelineScreen

        timeline = None if self._leaving else self._open(TimelineScreen)
        if timeline is not None:
            timeline.call_later(timeline.reveal, message.ref, message.frame, message.lanes)

    def _switch(self, mode: str) -> bool:
        """Switch to ``mode``, remembering where the jump came from (Esc goes back there);
        False once the app is being closed down (its modes are gone: a message still queued
        then, from a key pressed before, opens nothing)."""
        came_from = self.current_mode
        try:
            self.switch_mode(mode)
        except UnknownModeError:
            return False
        if came_from != mode:
            self._jumps.append(came_from)
            self._show_trail()
        return True

    def action_go_back(self) -> None:
        """Esc or backspace: back to the screen the last jump (enter on a finding, a verdict,
        an event, a search hit) came from."""
        if self._jumps:
            self.switch_mode(self._jumps.pop())
            self._show_trail()

    def _show_trail(self) -> None:
        """The way back, beside the report's name: ``run.json · esc: Findings ‹ Summary``,
        and in the bar on top of the screen (:mod:`graphdoctor.tui.widgets.mode_bar`)."""
        trail = " ‹ ".join(self.way_back)
        self.sub_title = f"{self.view.name} · esc: {trail}" if trail else self.view.name
        self.call_later(self._redraw_bars)  # the screen switched to is shown by then

    @property
    def way_back(self) -> tuple[str, ...]:
        """The titles of the screens esc goes back to, the next one first."""
        titles = {entry.name: entry.title for entry in SCREENS}
        return tuple(titles.get(mode, mode) for mode in reversed(self._jumps[-MOST_TRAIL:]))

    def _redraw_bars(self) -> None:
        from graphdoctor.tui.widgets.mode_bar import ModeBar

        for bar in self.screen.query(ModeBar):
            bar.redraw()

    def _open(self, kind: type[ScreenT]) -> ScreenT | None:
        """Switch to the screen of class ``kind`` and return it (None while the app closes).
        One opened for the first time is returned before it has mounted; what it is handed
        with its ``call_later`` waits in its queue, which it starts on only after its mount."""
        where = f"{kind.__module__}:{kind.__qualname__}"  # matched so, the others stay unloaded
        if not self._switch(next(entry.name for entry in SCREENS if entry.where == where)):
            return None
        screen = self.screen_stack[0]  # the mode's own, even while the search closes over it
        if not isinstance(screen, kind):
            raise TypeError(f"the {kind.__name__}'s mode holds a {type(screen).__name__}")
        return screen

    def crash_summary(self) -> str:
        """The exception that ended the app, in one line. Textual keeps it in a private
        attribute (for its test harness), so it is read with care."""
        error = getattr(self, "_exception", None)
        if not isinstance(error, BaseException):
            return "an unhandled error"
        message = str(error).strip().splitlines()
        return f"{type(error).__name__}: {message[0]}" if message else type(error).__name__

    def action_help(self) -> None:
        from graphdoctor.tui.screens.help import HelpScreen

        if isinstance(self.screen, HelpScreen):
            return
        self.push_screen(HelpScreen(help_sections()))

    def action_command_palette(self) -> None:
        """ctrl+p (the footer's "palette"): graphdoctor's palette, the search, in place of
        Textual's own, whose commands (themes, screenshots) are not this app's and whose
        PageUp in a list not laid out yet raised KeyError."""
        self.action_search()

    def action_search(self) -> None:
        from graphdoctor.tui.search import SearchPalette

        if isinstance(self.screen, SearchPalette):
            return  # open already (ctrl+f or ctrl+p again)
        self.search_hits.clear()  # a new search: n and N are the screens' own till a hit
        self.push_screen(SearchPalette())

    # -- the last search's hits (graphdoctor.tui.search_hits) ---------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """n, N and esc are the search's only while it holds them; else they fall through
        to the screen's own (the timeline's next event) and to back."""
        if action in SEARCH_ACTIONS:  # and never while something is typed (the : prompt)
            return self.search_hits.holds_keys() and not isinstance(self.focused, Input)
        return True

    def on_search_chosen(self, message: SearchChosen) -> None:
        if not self._leaving:
            self.search_hits.choose(message.trail)

    def action_step_hit(self, step: int) -> None:
        self.search_hits.step(step)

    def action_clear_search(self) -> None:
        self.search_hits.clear()


def help_sections() -> list[tuple[str, list[tuple[str, str]]]]:
    """Every key: first those that work everywhere, then each screen's own, the timeline's
    first, as it has the most."""
    from graphdoctor.tui.screens.help import binding_lines

    everywhere = [(f"{number} {entry.key}", entry.title)
                  for number, entry in enumerate(SCREENS, 1)]
    screens = sorted(SCREENS, key=lambda entry: entry.name != "timeline")
    own = [(entry.title, entry.screen.key_help()) for entry in screens]
    return [("Everywhere", everywhere + binding_lines([*APP_KEYS, *HIT_KEYS])),
            *((title, keys) for title, keys in own if keys)]
