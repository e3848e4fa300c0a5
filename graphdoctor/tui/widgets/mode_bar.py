"""The one-line bar on top of every screen: the screens (clickable), which one is open, and
the report's name."""

from __future__ import annotations

from rich.text import Text
from textual.events import Click
from textual.widgets import Static

MODES = (
    ("summary", "Summary"),
    ("findings", "Findings"),
    ("timeline", "Timeline"),
    ("allocations", "Allocations"),
    ("graphs", "Graphs"),
)


def mode_bar_text(active: str, findings: int, name: str, width: int) -> tuple[Text, list[int]]:
    """The bar's text, and the column where each mode's title ends (for mouse clicks)."""
    text = Text(" graphdoctor ", style="bold reverse")
    ends = []
    for number, (mode, title) in enumerate(MODES, 1):
        label = f"{title} ({findings})" if mode == "findings" and findings else title
        style = "bold reverse" if mode == active else ""
        text.append(" ")
        text.append(f"{number}", style="bold underline" if mode != active else style)
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

    def __init__(self, active: str) -> None:
        super().__init__()
        self.active = active
        self._ends: list[int] = []

    def on_mount(self) -> None:
        self._draw()

    def on_resize(self) -> None:
        self._draw()

    def _draw(self) -> None:
        view = self.app.view  # type: ignore[attr-defined]
        text, self._ends = mode_bar_text(self.active, len(view.findings), view.name,
                                         self.size.width)
        self.update(text)

    def on_click(self, event: Click) -> None:
        for (mode, _), end in zip(MODES, self._ends, strict=True):
            if event.x < end:
                self.app.switch_mode(mode)
                return
