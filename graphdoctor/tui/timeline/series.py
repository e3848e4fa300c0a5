"""Events of one kind in time order, and the per-column questions the timeline asks of them.

A :class:`Series` answers "what is in this column?" with two bisections of its sorted times,
whatever the number of events, so a redraw costs the same for a thousand events or a
million. Nothing here imports Textual.
"""

from __future__ import annotations

import operator
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import accumulate, compress, repeat
from typing import Any

from graphdoctor.trace.model import Table
from graphdoctor.tui.palette import BOUNDARY, Mark
from graphdoctor.tui.timeline.layout import Cell, shade


@dataclass(eq=False)
class Series:
    """Events on one lane, sorted by ``times``; ``rows[i]`` is event i's row in ``source``
    (a trace table or list, as in :class:`~graphdoctor.diagnose.findings.Evidence`)."""

    source: str
    name: str
    mark: Mark
    times: Sequence[int]
    rows: Sequence[int] | None = None  # None: event i is row i
    ends: Sequence[int] | None = None  # None: instants; otherwise spans [times[i], ends[i])
    shaded: bool = True  # a span's glyph shows how much of its column it covers
    rank: int = -1  # whose trace ``source`` is, in a multi-rank report
    boundaries: bool = False  # a span that starts where another ends shows where (▐)

    def __len__(self) -> int:
        return len(self.times)

    def row(self, index: int) -> int:
        return index if self.rows is None else self.rows[index]

    def shift(self, offset: int) -> None:
        """Every time moved by ``offset`` ns (a rank's place on a job's time axis)."""
        self.times = [t + offset for t in self.times]
        if self.ends is not None:
            self.ends = [t + offset for t in self.ends]
        self.__dict__.pop("_latest_end", None)  # the one cache that holds times

    @cached_property
    def _covered_before(self) -> list[int]:
        """Total span length of events 0..i-1 at index i (spans only)."""
        assert self.ends is not None
        lengths = map(max, map(operator.sub, self.ends, self.times), repeat(0))
        return list(accumulate(lengths, initial=0))

    @cached_property
    def _latest_end(self) -> list[int]:
        """The latest end among events 0..i at index i (spans only)."""
        assert self.ends is not None
        return list(accumulate(self.ends, max))

    def cells(self, edges: Sequence[int]) -> list[Cell | None]:
        """One cell per column between consecutive ``edges``; None where nothing is."""
        times = self.times
        positions = [bisect_left(times, edge) for edge in edges]
        if self.ends is None:
            cell = (self.mark.glyph, self.mark.style)
            return [cell if positions[c + 1] > positions[c] else None
                    for c in range(len(edges) - 1)]
        cells = [self._span_cell(edges[c], edges[c + 1], positions[c], positions[c + 1])
                 for c in range(len(edges) - 1)]
        return self._with_boundaries(cells, edges, positions) if self.boundaries else cells

    def _with_boundaries(self, cells: list[Cell | None], edges: Sequence[int],
                         positions: list[int]) -> list[Cell | None]:
        """Back to back, spans would read as one bar: the first column of a span at least
        two columns long, right after a column something covers, is drawn as ▐."""
        assert self.ends is not None
        for column in range(1, len(cells)):
            first, stop = positions[column], positions[column + 1]
            cell = cells[column]
            if stop - first == 1 and cell is not None and cells[column - 1] is not None \
                    and self.ends[first] >= edges[column] + 2 * (edges[1] - edges[0]):
                cells[column] = (BOUNDARY, cell[1])
        return cells

    def _span_cell(self, start: int, end: int, first: int, stop: int) -> Cell | None:
        assert self.ends is not None
        covered = self._covered_before[stop] - self._covered_before[first]
        if stop > first:  # the last span to start here may run past the column's end
            covered -= max(self.ends[stop - 1] - end, 0)
        carried = min(self._latest_end[first - 1], end) - start if first else 0
        if stop == first and carried <= 0:
            return None
        if not self.shaded:
            return (self.mark.glyph, self.mark.style)
        return (shade((covered + max(carried, 0)) / max(end - start, 1)), self.mark.style)

    def shows_in(self, start: int, end: int) -> bool:
        """Whether any of it is in [start, end): an event there, or a span across it."""
        index = bisect_left(self.times, start)
        if index < len(self.times) and self.times[index] < end:
            return True
        return bool(index) and self.ends is not None and self._latest_end[index - 1] > start

    def first_after(self, t: int) -> int | None:
        index = bisect_right(self.times, t)
        return index if index < len(self.times) else None

    def last_before(self, t: int) -> int | None:
        index = bisect_left(self.times, t) - 1
        return index if index >= 0 else None

    def nearest(self, start: int, end: int, t: int) -> int | None:
        """The event in [start, end) nearest ``t``, or the span that runs across ``start``."""
        first, stop = bisect_left(self.times, start), bisect_left(self.times, end)
        if first == stop:
            return self._covering(first, start)
        after = bisect_left(self.times, t, first, stop)
        candidates = [i for i in (after - 1, after) if first <= i < stop]
        return min(candidates, key=lambda i: abs(self.times[i] - t))

    def _covering(self, index: int, t: int) -> int | None:
        if self.ends is None or index == 0:
            return None
        return index - 1 if self.ends[index - 1] > t else None

    def index_of_row(self, row: int) -> int | None:
        """The index of the event for ``row``, wherever it is drawn (a replay on the GPU is
        drawn after its launch): rows of one series are in table order."""
        if self.rows is None:
            return row if 0 <= row < len(self.times) else None
        index = bisect_left(self.rows, row)
        return index if index < len(self.rows) and self.rows[index] == row else None

    def find(self, row: int, t: int) -> int | None:
        """The index of the event for ``row``, which happened at ``t``."""
        index = bisect_left(self.times, t)
        while index < len(self.times) and self.times[index] == t:
            if self.row(index) == row:
                return index
            index += 1
        return None


def queued(launched: Sequence[int], ends: Sequence[int]) -> tuple[list[int], list[int]]:
    """When each replay ran on its stream: not before it was launched, nor before the one
    launched before it ended (a stream runs its work in order). A loop that launches
    faster than the GPU runs queues its replays; drawn at their launch they would overlap."""
    starts, finishes, free = [], [], 0
    for launch, end in zip(launched, ends, strict=True):
        start = max(launch, free)
        free = start + max(end - launch, 0)
        starts.append(start)
        finishes.append(free)
    return starts, finishes


class TimeOrder:
    """A table's rows in time order, without moving them: evidence points at rows in place.

    Tables from :func:`graphdoctor.trace.assemble` are already sorted, which costs one linear
    check; a hand-built trace that is not gets an order computed once."""

    def __init__(self, table: Table[Any]):
        self.table = table
        times: list[int] = table.data["t"]
        in_order = all(map(operator.le, times, times[1:]))
        self.order: list[int] | None = None if in_order else sorted(
            range(len(times)), key=times.__getitem__)
        self._columns: dict[str, list[Any]] = {}
        self._distinct: dict[str, set[Any]] = {}

    def __len__(self) -> int:
        return len(self.table)

    def column(self, name: str) -> list[Any]:
        """A column, in time order."""
        if self.order is None:
            return self.table.data[name]
        if name not in self._columns:
            self._columns[name] = list(map(self.table.data[name].__getitem__, self.order))
        return self._columns[name]

    def where(self, **equal: Any) -> Sequence[int]:
        """Time-order positions of the rows whose columns equal the given values."""
        positions: Sequence[int] = range(len(self))
        for name, value in equal.items():
            distinct = self._distinct_values(name)
            if value not in distinct:
                return []
            if len(distinct) == 1:  # every row matches: skip the linear pass
                continue
            column = self.column(name)
            values = column if isinstance(positions, range) else map(column.__getitem__, positions)
            positions = list(compress(positions, map(value.__eq__, values)))
        return positions

    def distinct(self, name: str) -> list[Any]:
        return sorted(self._distinct_values(name), key=str)

    def _distinct_values(self, name: str) -> set[Any]:
        if name not in self._distinct:
            self._distinct[name] = set(self.table.data[name])
        return self._distinct[name]

    def times_at(self, positions: Sequence[int]) -> Sequence[int]:
        times = self.column("t")
        return times if _everything(positions, len(self)) else list(map(times.__getitem__,
                                                                         positions))

    def rows_at(self, positions: Sequence[int]) -> Sequence[int] | None:
        if self.order is None:
            return None if _everything(positions, len(self)) else positions
        return self.order if _everything(positions, len(self)) else list(
            map(self.order.__getitem__, positions))

    def ends_at(self, positions: Sequence[int], length_column: str) -> list[int]:
        lengths = self.column(length_column)
        return list(map(operator.add, self.times_at(positions),
                        map(lengths.__getitem__, positions)))

    def series(self, source: str, name: str, mark: Mark, positions: Sequence[int],
               length_column: str | None = None, shaded: bool = True) -> Series:
        ends = self.ends_at(positions, length_column) if length_column else None
        return Series(source, name, mark, self.times_at(positions), self.rows_at(positions),
                      ends, shaded)


def _everything(positions: Sequence[int], length: int) -> bool:
    return isinstance(positions, range) or len(positions) == length
