"""What every screen of the app shares: the report's view, the bar of screens on top, its
keys in the help; and :class:`ScreenEntry`, how the app declares a screen."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass

from textual import events, on
from textual.css.query import NoMatches
from textual.screen import Screen

from graphdoctor.tui.report_view import ReportView
from graphdoctor.tui.widgets.mode_bar import ModeBar

NARROW = 120  # below this many columns, panes stack instead of standing side by side


@dataclass(frozen=True)
class ScreenEntry:
    """One of the app's screens as its ``SCREENS`` declare it: the name of its mode, the
    letter that opens it (its place in ``SCREENS`` is the number that does), its title in
    the bar and the help, and where its class is (``module:Class``).

    The class is imported when first asked for: the app's first frame needs only its first
    screen's module, and those of the screens whose count the bar shows (``counted``)."""

    name: str
    key: str
    title: str
    where: str
    counted: bool = False

    @property
    def screen(self) -> type[ReportScreen]:
        """The screen's class, its module imported on first use."""
        module, name = self.where.split(":")
        screen = getattr(importlib.import_module(module), name)
        if not (isinstance(screen, type) and issubclass(screen, ReportScreen)):
            raise TypeError(f"{self.where} is not a ReportScreen")
        return screen

    def build(self, view: ReportView, screens: Sequence[ScreenEntry]) -> ReportScreen:
        """A new screen of this kind, for the app's mode of this name."""
        return self.screen(view, screens, self.name)

    def bar_count(self, view: ReportView) -> int:
        """How many things the screen lists, for the bar; 0 (none shown) unless counted."""
        return self.screen.bar_count(view) if self.counted else 0


class ReportScreen(Screen[None]):
    """A screen of the app, built with the report's view and the app's screens (for the bar
    on top). To show something on another screen it posts a message of
    :mod:`graphdoctor.tui.navigation`; the app opens that screen and hands it over."""

    def __init__(self, view: ReportView, screens: Sequence[ScreenEntry], name: str) -> None:
        super().__init__(name=name)
        self.view = view
        self.screens = screens

    @classmethod
    def bar_count(cls, view: ReportView) -> int:
        """How many things the screen lists, shown beside its title in the bar (0: none)."""
        return 0

    @classmethod
    def key_help(cls) -> list[tuple[str, str]]:
        """(keys, what they do) for the help screen's section on this screen."""
        return []

    def mode_bar(self) -> ModeBar:
        """The bar of screens, this one lit."""
        tabs = [(entry.name, _label(entry, self.view)) for entry in self.screens]
        live = self.view.live
        return ModeBar(tabs, self.name, self.view.name, live.badge if live is not None else "")

    def on_resize(self) -> None:
        self.set_class(self.size.width < NARROW, "narrow")

    # -- a live view's next report (graphdoctor.tui.live) -----------------------------------
    def kept_place(self) -> object:
        """Where the user is on this screen, to come back to on the next report."""
        return None

    def return_to(self, place: object) -> None:
        """Back where :meth:`kept_place` said, as far as the new report allows."""

    async def show_view(self, view: ReportView) -> None:
        """The screen again, on ``view``: built anew (its mount's work done again), then
        back where the user was, the focus where it was."""
        if view is self.view or not self.is_attached:
            return
        place, focused = self.kept_place(), self.focused.id if self.focused else None
        self.workers.cancel_node(self)  # what they count is for the report before
        self.view = view
        await self.recompose()
        mount = getattr(self, "on_mount", None)
        if callable(mount):
            mount()
        self.return_to(place)
        if focused:
            try:
                self.query_one(f"#{focused}").focus()
            except NoMatches:
                pass

    def on_screen_resume(self) -> None:
        """Shown again (its mode chosen, a box over it closed): on the app's latest view."""
        latest = getattr(self.app, "view", self.view)
        if isinstance(latest, ReportView) and latest is not self.view:
            self.call_later(self.show_view, latest)

    @on(events.Mount)
    def _note_styles_current(self) -> None:
        """Note that this screen's styles are up to date once it is mounted. Textual notes
        it only for a screen that is mounted when it restyles the app, which a mode's screen
        is not on its first visit; so the screen shown last for the first time was restyled,
        with every widget of the app, on its next visit (going back to the timeline from a
        jump, say: 20 ms at 200x60 on a 200,000-event report)."""
        self._css_update_count = self.app._css_update_count


def _label(entry: ScreenEntry, view: ReportView) -> str:
    count = entry.bar_count(view)
    return f"{entry.title} ({count})" if count else entry.title
