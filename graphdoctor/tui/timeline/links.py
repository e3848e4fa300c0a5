"""Forks and joins drawn between stream lanes: an overlay on the timeline's rows.

Each wait of one stream for another inside a capture (see
:mod:`graphdoctor.facts.stream_links`) becomes a vertical line in its column, from the
lane of the stream waited on (┬ or ┴) down or up to the lane of the stream that waits
(whose own cell keeps its ``w``). A fork never joined back is dashed and red, so it reads
without colour too. Pure; no Textual import.
"""

from __future__ import annotations

from collections.abc import Sequence

from graphdoctor.facts.stream_links import StreamLink
from graphdoctor.tui.palette import LINK_ENDS, STREAM_LINK, UNJOINED_LINK
from graphdoctor.tui.timeline.lanes import Lane
from graphdoctor.tui.timeline.layout import Window, column_of
from graphdoctor.tui.timeline.view import Overlay, ScreenRow


def stream_lane_key(stream: int, rank: int) -> str:
    """The key of a stream's lane (see timeline_build and timeline_ranks)."""
    key = f"stream:{stream}"
    return key if rank < 0 else f"r{rank}/{key}"


def links_overlay(lanes: Sequence[Lane], links: Sequence[tuple[int, StreamLink]]) -> Overlay:
    """An overlay drawing ``links`` ((rank, link) pairs) between the lanes of their streams."""
    index = {lane.key: position for position, lane in enumerate(lanes)}

    def draw(rows: list[ScreenRow], edges: list[int]) -> list[ScreenRow]:
        window = Window(edges[0], edges[-1])
        out = list(rows)
        for rank, link in links:
            lanes_of = (index.get(stream_lane_key(link.waited_on, rank)),
                        index.get(stream_lane_key(link.waiting, rank)))
            column = column_of(window, len(edges) - 1, link.t)
            if None not in lanes_of and 0 <= column < len(edges) - 1:
                _draw_link(out, lanes_of[0], lanes_of[1], column, link)  # type: ignore[arg-type]
        return out

    return draw


def _draw_link(rows: list[ScreenRow], source: int, target: int, column: int,
               link: StreamLink) -> None:
    """The line from the first row of lane ``source`` to the first of ``target``."""
    first = {row.lane: position for position, row in reversed(list(enumerate(rows)))}
    if source not in first or target not in first or source == target:
        return
    top, bottom = sorted((first[source], first[target]))
    mark = STREAM_LINK if link.joined else UNJOINED_LINK
    for position in range(top + 1, bottom):
        _put(rows, position, column, mark.glyph, mark.style)
    end = LINK_ENDS[0] if first[source] < first[target] else LINK_ENDS[1]
    _put(rows, first[source], column, end, mark.style)


def _put(rows: list[ScreenRow], position: int, column: int, glyph: str, style: str) -> None:
    row = rows[position]
    cells = list(row.cells)
    cursor = "reverse" if "reverse" in cells[column][1].split() else ""
    cells[column] = (glyph, f"{style} {cursor}".strip())
    rows[position] = ScreenRow(row.lane, row.label, cells)
