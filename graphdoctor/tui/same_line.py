"""Every event from the selected event's line of the user's code, underlined on every lane of
its rank: a ``.item()`` in a loop shows each time it ran.

The work is done once per selection, never per redraw: the stacks whose innermost user frame
is that line (a trace has few stacks), then the rows of each table or list that carry one of
those stacks, then where each row sits in each lane's series. A redraw only underlines the
columns of what was found. Pure; no Textual import.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from graphdoctor.facts.locations import package_path
from graphdoctor.facts.queries import SourceLine, culprit_line
from graphdoctor.trace.event_kinds import KINDS, ExceptionRecord
from graphdoctor.trace.model import NONE, Frame, Trace
from graphdoctor.tui.events import EventRef, event_span
from graphdoctor.tui.palette import SAME_LINE_STYLE
from graphdoctor.tui.timeline.lanes import Lane
from graphdoctor.tui.timeline.series import Series
from graphdoctor.tui.timeline.view import Overlay, ScreenRow

Interval = tuple[int, int]
"""When an event happened, [start, end]; an instant has start == end."""

# The trace's lists besides the kinds of event whose items carry a stack.
STRUCTURE_WITH_STACKS = ("graphs",)
LOOKUP_COST = 16  # a bisection costs about this many steps of a pass over a series


@dataclass(frozen=True)
class SameLine:
    """The events from one line of the user's code, lane by lane (index into the lanes)."""

    line: SourceLine
    count: int
    intervals: dict[int, list[Interval]] = field(default_factory=dict)

    def note(self, cwd: str = "") -> str:
        where = f"{package_path(self.line[0], cwd)}:{self.line[1]}"
        events = "event" if self.count == 1 else "events"
        verb = "is" if self.count == 1 else "are"
        return f"{self.count} {events} from this line ({where}) {verb} underlined"

    def overlay(self) -> Overlay:
        return underline_overlay(self.intervals)


def line_of(frames: Sequence[Frame]) -> SourceLine | None:
    """The line of a stack's user frame (:func:`.queries.culprit_line`), if it has one."""
    return culprit_line(frames)


def stacks_from(trace: Trace, line: SourceLine) -> set[int]:
    """The ids of the stacks whose innermost user frame is ``line``."""
    return {stack for stack in range(len(trace.stacks)) if line_of(trace.stack(stack)) == line}


def rows_with_stacks(trace: Trace, stacks: set[int]) -> dict[str, list[int]]:
    """For each table or list with a stack per event, the rows whose stack is in ``stacks``."""
    found = {}
    for source, stack_ids in _stack_columns(trace):
        rows = [row for row, stack in enumerate(stack_ids) if stack in stacks]
        if rows:
            found[source] = rows
    return found


def _stack_columns(trace: Trace) -> Iterator[tuple[str, Sequence[int]]]:
    for source, table in trace.tables.items():
        if "stack" in table.data:
            yield source, table.data["stack"]
    lists = [kind.name for kind in KINDS if not kind.columnar] + list(STRUCTURE_WITH_STACKS)
    for source in lists:
        yield source, [_stack_of(item) for item in getattr(trace, source, ())]


def _stack_of(item: Any) -> int:
    if isinstance(item, ExceptionRecord):  # the stack the details pane shows: its root's
        return item.root.stack if item.chain else NONE
    return int(getattr(item, "stack", NONE))


def same_line(trace: Trace, rank: int, lanes: Sequence[Lane], frames: Sequence[Frame],
              offset: int = 0) -> SameLine | None:
    """The events of ``rank``'s trace from the line of ``frames`` (the selected event's
    stack), found on ``lanes``, where the rank's times are moved by ``offset`` (its place on
    a job's axis); None when the stack has no line of the user's."""
    line = line_of(frames)
    if line is None:
        return None
    rows = rows_with_stacks(trace, stacks_from(trace, line))
    starts = {source: [(row, start) for row in source_rows
                       if (start := _start(trace, source, row, rank, offset)) is not None]
              for source, source_rows in rows.items()}
    intervals, shown = _on_lanes(lanes, rank, starts)
    return SameLine(line, len(shown), intervals)


def _start(trace: Trace, source: str, row: int, rank: int, offset: int) -> int | None:
    span = event_span(trace, EventRef(source, row, rank))
    return span[0] + offset if span is not None else None


def _on_lanes(lanes: Sequence[Lane], rank: int, starts: dict[str, list[tuple[int, int]]]
              ) -> tuple[dict[int, list[Interval]], set[tuple[str, int]]]:
    """Where each event (``starts``: source -> its rows and their times) is drawn, lane by
    lane, merged where they overlap; and which of them are drawn at all."""
    intervals: dict[int, list[Interval]] = {}
    shown = set()
    for index, lane in enumerate(lanes):
        found = []
        for series in (s for s in lane.series if s.rank == rank and s.source in starts):
            for row, position in positions_in(series, starts[series.source]):
                start = series.times[position]
                end = series.ends[position] if series.ends is not None else start
                found.append((start, max(end, start)))
                shown.add((series.source, row))
        if found:
            intervals[index] = merged(found)
    return intervals, shown


def positions_in(series: Series, rows: list[tuple[int, int]]) -> Iterator[tuple[int, int]]:
    """(row, position in ``series``) of each of ``rows`` (with its time) the series holds:
    a bisection each, or one pass over the series when that is cheaper."""
    if len(rows) * LOOKUP_COST < len(series):
        for row, start in rows:
            position = series.find(row, start)
            if position is not None:
                yield row, position
        return
    wanted = {row for row, _ in rows}
    for position in range(len(series)):
        if series.row(position) in wanted:
            yield series.row(position), position


def merged(intervals: list[Interval]) -> list[Interval]:
    """Overlapping intervals as one, in time order: their ends then rise with their starts,
    so a column's question is one bisection."""
    out: list[Interval] = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


# -- drawing ---------------------------------------------------------------------------------
def underline_overlay(intervals: dict[int, list[Interval]]) -> Overlay:
    """An overlay underlining the columns of ``intervals`` (each lane's :func:`merged`) on
    the bottom row of their lane. A redraw costs a bisection per column, however many
    events the line made."""
    ends = {lane: [end for _, end in spans] for lane, spans in intervals.items()}

    def underline(rows: list[ScreenRow], edges: list[int]) -> list[ScreenRow]:
        bottom = {row.lane: position for position, row in enumerate(rows)}
        out = list(rows)
        for lane in intervals.keys() & bottom.keys():
            columns = _columns(intervals[lane], ends[lane], edges)
            out[bottom[lane]] = _underlined(out[bottom[lane]], columns)
        return out

    return underline


def _columns(spans: Sequence[Interval], ends: Sequence[int], edges: Sequence[int]) -> set[int]:
    """The columns [edges[c], edges[c + 1]) that show some of ``spans``."""
    columns = set()
    for column in range(len(edges) - 1):
        first = bisect_left(ends, edges[column])  # the first span not over before the column
        if first < len(spans) and spans[first][0] < edges[column + 1]:
            columns.add(column)
    return columns


def _underlined(row: ScreenRow, columns: set[int]) -> ScreenRow:
    cells = [(glyph, f"{style} {SAME_LINE_STYLE}".strip()) if column in columns
             else (glyph, style) for column, (glyph, style) in enumerate(row.cells)]
    return replace(row, cells=cells)
