"""Text for a terminal, as every command's text output draws it: whatever came from a
report cleaned of control codes (:class:`Printable`), no line ending in spaces, and list
items that wrap under themselves (:func:`item`)."""

from __future__ import annotations

import io
import re
from collections.abc import Iterable

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.padding import Padding
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from graphdoctor.clean_text import clean

STYLE = re.compile(r"\x1b\[[0-9;]*m")
TRAILING = re.compile(r"(?: |\x1b\[[0-9;]*m)+$")  # the spaces and style codes ending a line
ITEM_INDENT = 2  # a list's items stand this far in


def printed(parts: Iterable[RenderableType], width: int, color: bool) -> str:
    """``parts`` drawn one after another for a terminal of ``width`` columns, as
    :class:`Printable`, with no line ending in spaces."""
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=color,
                      color_system="standard" if color else None, no_color=not color,
                      highlight=False, emoji=False, soft_wrap=False)
    for part in parts:
        console.print(Printable(part))
    # rich pads a table's cells to the column: spaces a terminal shows as nothing, but
    # copied into a ticket or diffed they are noise
    return "\n".join(_without_trailing_spaces(line) for line in buffer.getvalue().split("\n"))


def _without_trailing_spaces(line: str) -> str:
    """The line without the spaces at its end, keeping the style codes among them."""
    return TRAILING.sub(lambda end: "".join(STYLE.findall(end.group(0))), line)


def item(marker: str, text: str, style: str = "") -> RenderableType:
    """A list's line, :data:`ITEM_INDENT` columns in: wrapped, it goes on under its text,
    past the marker (``+``, ``-``, ``speedup-drop:``, ``1.``), never at the terminal's edge.
    Both are the report's text: shown, never read as markup."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    grid.add_row(Text(clean(marker), style=style), Text(clean(text), style=style))
    return Padding(grid, (0, 0, 0, ITEM_INDENT))


class Printable:
    """A renderable drawn with :func:`clean` applied to all its text: only the control
    codes the console writes itself (colours, styles) reach the terminal."""

    def __init__(self, renderable: RenderableType):
        self.renderable = renderable

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for segment in console.render(self.renderable, options):
            yield segment if segment.control else Segment(clean(segment.text),
                                                          segment.style)
