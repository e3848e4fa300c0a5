"""The legend line under the lanes: what each glyph in view means, for the window on screen
only, so it stays one line and changes as the view does (the help screen lists them all).
Pure; no Textual import.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from graphdoctor.clean_text import clean
from graphdoctor.tui import palette as marks
from graphdoctor.tui.timeline.lanes import Lane
from graphdoctor.tui.timeline.layout import SHADES, Cell, Window
from graphdoctor.tui.timeline.node_lane import OPEN_FROM_COLUMNS, NodeLane

Entry = tuple[str, str, str]  # glyph, style, meaning
SEPARATOR = "  "
PARTIAL = (SHADES[:-1], "white", "part of a column")
BOUNDARY = (marks.BOUNDARY, "green", "a replay starts")
NODES = ((marks.NODE_KERNEL.glyph, marks.NODE_KERNEL.style, "kernel"),
         (marks.NODE_COLLECTIVE.glyph, marks.NODE_COLLECTIVE.style, "NCCL kernel"),
         (marks.NODE_COPY.glyph, marks.NODE_COPY.style, "copy"),
         (marks.NODE_HOST.glyph, marks.NODE_HOST.style, "host callback"))


def entries(lanes: Sequence[Lane], window: Window, width: int) -> list[Entry]:
    """Each glyph shown in ``window`` once, with what it means, in lane order."""
    seen: dict[tuple[str, str], Entry] = {}
    for entry in _all_entries(lanes, window, width):
        seen.setdefault((entry[0], entry[2]), entry)
    return list(seen.values())


def _all_entries(lanes: Sequence[Lane], window: Window, width: int) -> Iterator[Entry]:
    for lane in lanes:
        if isinstance(lane, NodeLane):
            yield from _node_entries(lane, window, width)
            continue
        for series in lane.series:
            if series.name and series.shows_in(window.start, window.end):
                yield (series.mark.glyph, series.mark.style, series.name)
                if series.ends is not None and series.shaded:
                    yield PARTIAL
                if series.boundaries:
                    yield BOUNDARY


def _node_entries(lane: NodeLane, window: Window, width: int) -> Iterator[Entry]:
    """A node lane's glyphs, where it opens its replays in this window."""
    visible = lane.replays_in(window.start, window.end)
    if visible and len(visible) * OPEN_FROM_COLUMNS <= width:
        yield from NODES


def line(found: Sequence[Entry], width: int) -> list[Cell]:
    """The entries as one row of cells, cut with … where they do not fit."""
    cells: list[Cell] = []
    for glyph, style, meaning in found:  # a meaning may be the report's text: cleaned
        piece = [*((g, style) for g in glyph),
                 *((c, "bright_black") for c in f" {clean(meaning)}")]
        if len(cells) + len(piece) + len(SEPARATOR) > width:
            cells.append(("…", "bright_black"))
            break
        cells += [*piece, *((c, "") for c in SEPARATOR)]
    return cells[:width]
