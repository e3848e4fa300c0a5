"""The one-line bar on top of every screen: the screens (clickable), which one is open, and
the report's name; in place of the app's name, the way back after a jump ("esc:
Findings"), while n and N step through a search's hits, which hit is on show ("hit 3 of 122
· n/N"), and in a live view, that it is live and for how long the run has gone ("● live
42.0 s"), where even 80 columns keep it."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.events import Click
from textual.widgets import Static

from graphdoctor.tui.navigation import GoToScreen
from graphdoctor.tui.search_hits import search_hits

Tab = tuple[str, str]
"""A screen in the bar: its name, and its label there. Its number is its place in the bar."""


def way_back_note(trail: Sequence[str], tabs: Sequence[Tab], width: int) -> str:
    """``esc: Findings ‹ Summary``: as much of the way back (the next screen first) as
    leaves the screens' titles room in ``width``; at least the next screen."""
    room = width - len(mode_bar_text(tabs, None, "", 0, "")[0]) + len(" graphdoctor ")
    for shown in range(len(trail), 0, -1):
        note = "esc: " + " ‹ ".join(trail[:shown])
        if len(note) + 2 <= room or shown == 1:
            return note
    return ""


def mode_bar_text(tabs: Sequence[Tab], active: str | None, name: str,
                  width: int, note: str = "") -> tuple[Text, list[int]]:
    """The bar's text, and the column where each screen's label ends (for mouse clicks).
    A ``note`` (the search's hit, or the way back) stands where the app's name does."""
    text = Text(f" {note or 'graphdoctor'} ", style="bold reverse", no_wrap=True,
                overflow="crop")
    ends = []
    for number, (screen, label) in enumerate(tabs, 1):
        style = "bold reverse" if screen == active else ""
        text.append(" ")
        text.append(f"{number}", style="bold underline" if screen != active else style)
        text.append(f" {label}", style=style)
        ends.append(text.cell_len)
    room = width - text.cell_len - 3
    if room >= 16:
        shown = name if len(name) <= room else "…" + name[-(room - 1):]
        text.append(" " * (width - text.cell_len - len(shown) - 1))
        text.append(shown, style="dim")
    return text, ends


class ModeBar(Static):
    """Which screen is open; click a title (or press its number) to switch."""

    DEFAULT_CSS = """
    ModeBar {
        height: 1;
        width: 1fr;
        background: $panel;
    }
    """

    def __init__(self, tabs: Sequence[Tab], active: str | None, report_name: str,
                 badge: str = "") -> None:
        super().__init__()
        self.tabs = tabs
        self.active = active
        self.report_name = report_name
        self.badge = badge
        self._ends: list[int] = []

    def on_mount(self) -> None:
        hits = search_hits(self.app)
        if hits is not None:
            hits.changed.subscribe(self, lambda _: self._draw())
        self._draw()

    def on_resize(self) -> None:
        self._draw()

    def show_badge(self, badge: str) -> None:
        """Say another badge in place of the app's name (a live view's running time)."""
        self.badge = badge
        self._draw()

    def on_show(self) -> None:
        self._draw()  # its screen is shown again: the search may have moved meanwhile

    def redraw(self) -> None:
        """Draw the bar again (the way back changed)."""
        self._draw()

    def _draw(self) -> None:
        hits = search_hits(self.app)
        trail: Sequence[str] = getattr(self.app, "way_back", ())
        note = ((hits.note if hits else "") or way_back_note(trail, self.tabs, self.size.width)
                or self.badge)
        text, self._ends = mode_bar_text(self.tabs, self.active, self.report_name,
                                         self.size.width, note)
        self.update(text)

    def on_click(self, event: Click) -> None:
        for (screen, _), end in zip(self.tabs, self._ends, strict=True):
            if event.x < end:
                self.post_message(GoToScreen(screen))
                return
