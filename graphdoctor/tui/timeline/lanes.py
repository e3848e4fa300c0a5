"""What the timeline shows, lane by lane: the lanes themselves and how each becomes cells.

A lane is a stack of :class:`Series` drawn into one or more rows; where two series share a
cell the higher-priority mark wins. The phase lane writes phase names into its bars, the
memory lane draws allocated bytes from zero up, the GPU lane utilisation from 0 to 100%,
each with its scale in the label column. Lanes also answer the
navigation questions: the next event after a moment, the event under the cursor, and
whether an event (a finding's evidence, say) is on this lane. No Textual import.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise

from graphdoctor.tui.events import EventRef
from graphdoctor.tui.palette import GPU_UTIL_STYLE, MEMORY_STYLE
from graphdoctor.tui.timeline.layout import BLANK, Cell, bar_rows, overlay_labels
from graphdoctor.tui.timeline.memory import MemoryCurve
from graphdoctor.tui.timeline.series import Series
from graphdoctor.units import format_bytes

LaneRow = tuple[str, list[Cell]]
"""One screen row of a lane: the text for the label column, and its cells."""


@dataclass(frozen=True)
class EventAt:
    """An event as a lane holds it: its series and its position there."""

    series: Series
    index: int

    @property
    def ref(self) -> EventRef:
        return EventRef(self.series.source, self.series.row(self.index), self.series.rank)

    @property
    def time(self) -> int:
        return self.series.times[self.index]


@dataclass(eq=False)
class Lane:
    """A row of the timeline with its label and the series drawn on it."""

    key: str
    label: str
    series: list[Series] = field(default_factory=list)
    height: int = 1
    about: str = ""  # one line for the help screen and the status line
    rank: int = -1  # the rank whose trace it shows, in a multi-rank report

    def rows(self, edges: Sequence[int]) -> list[LaneRow]:
        return [(self.label, self.merged(edges)[0])]

    def merged(self, edges: Sequence[int]) -> tuple[list[Cell], list[str | None]]:
        """The winning cell of each column, and the name of the series that won it."""
        cells = [BLANK] * (len(edges) - 1)
        winners: list[str | None] = [None] * len(cells)
        for series in sorted(self.series, key=lambda s: s.mark.priority):
            for column, cell in enumerate(series.cells(edges)):
                if cell is not None:
                    cells[column], winners[column] = cell, series.name
        return cells, winners

    def next_event(self, t: int, forward: bool = True) -> EventAt | None:
        """The first event strictly after ``t`` (or the last strictly before it)."""
        found = []
        for series in self.series:
            index = series.first_after(t) if forward else series.last_before(t)
            if index is not None:
                found.append(EventAt(series, index))
        if not found:
            return None
        return (min if forward else max)(found, key=lambda e: (e.time, -e.series.mark.priority))

    def event_near(self, start: int, end: int, t: int) -> EventAt | None:
        """The most important event in [start, end), nearest ``t`` among equals."""
        for series in sorted(self.series, key=lambda s: -s.mark.priority):
            index = series.nearest(start, end, t)
            if index is not None:
                return EventAt(series, index)
        return None

    def locate(self, ref: EventRef, t: int) -> EventAt | None:
        """This lane's entry for ``ref`` (which happened at ``t``), if it is on this lane."""
        for series in self.series:
            if series.source == ref.kind and series.rank == ref.rank:
                index = series.find(ref.index, t)
                if index is not None:
                    return EventAt(series, index)
        return None


@dataclass(eq=False)
class PhaseLane(Lane):
    """Phases as coloured bars with their names written in where they fit."""

    def rows(self, edges: Sequence[int]) -> list[LaneRow]:
        cells, winners = self.merged(edges)
        labels = {s.name: s.name for s in self.series if s.name != "eager"}
        return [(self.label, overlay_labels(cells, winners, labels))]


@dataclass(eq=False)
class MemoryLane(Lane):
    """Bytes the caching allocator had allocated (not reserved), as bars from zero up to the
    highest point on screen: the top row's label is that high, the bottom row's is 0, so a
    50% rise reads as one."""

    curve: MemoryCurve = field(default_factory=lambda: MemoryCurve([], [], [], []))
    height: int = 3
    flat: bool = False  # whether the curve barely moves over the run (MemoryCurve.flat)

    def rows(self, edges: Sequence[int]) -> list[LaneRow]:
        peaks = self.curve.peaks(edges)
        high = max((p for p in peaks if p is not None), default=None)
        if high is None:
            blank = [BLANK] * (len(edges) - 1)
            return [(label, blank) for label in self._labels(None)]
        fractions = [None if p is None else _from_zero(p, high) for p in peaks]
        return list(zip(self._labels(high), bar_rows(fractions, self.height, MEMORY_STYLE),
                        strict=True))

    def _labels(self, high: int | None) -> list[str]:
        """The scale's ends, top and bottom, and between them what is measured: "allocated"
        under the lane's name where there is room, in its place where there is not."""
        ranked = f"r{self.rank} " if self.rank >= 0 else ""
        if self.height < 3:  # fit_heights never makes it so short: no room for a scale
            return [ranked + ALLOCATED, *[""] * (self.height - 1)]
        top, bottom = ("", "") if high is None else (format_bytes(high), "0 B")
        names = [self.label, ALLOCATED] if self.height > 3 else [ranked + ALLOCATED]
        return [top, *names, *[""] * (self.height - 2 - len(names)), bottom]


ALLOCATED = "allocated"  # what the memory curve plots: the allocator's allocated bytes


def _from_zero(value: int, high: int) -> float:
    # Zero at the bottom, so the bars' heights compare as the bytes do.
    return max(value, 0) / high if high > 0 else 0.0


@dataclass(eq=False)
class UtilisationLane(Lane):
    """GPU utilisation readings, 0 to 100%: the highest in each column, each reading held
    until the next one, the last until ``run_end`` (the edge of the window when unknown),
    so a window between two readings shows the one in force rather than nothing."""

    readings: Series | None = None
    values: Sequence[int] = ()
    run_end: int | None = None

    def rows(self, edges: Sequence[int]) -> list[LaneRow]:
        fractions = [self._level(start, end) for start, end in pairwise(edges)]
        return list(zip(self._labels(), bar_rows(fractions, self.height, GPU_UTIL_STYLE),
                        strict=True))

    def _labels(self) -> list[str]:
        """The % scale: 100% at the top and 0% at the bottom, the lane's name between them
        where there is room; a one-row lane says only that it is in %."""
        if self.height == 1:
            return [f"{self.label} %"]
        if self.height == 2:
            return [f"{self.label.removesuffix(' util')} 100%", "0%"]
        return ["100%", self.label, *[""] * (self.height - 3), "0%"]

    def _level(self, start: int, end: int) -> float | None:
        assert self.readings is not None
        times = self.readings.times
        in_force = bisect_right(times, start) - 1  # the last reading at or before ``start``
        stop = bisect_left(times, end)
        if stop == 0 or (self.run_end is not None and start >= self.run_end):
            return None  # before the first reading, or after the run
        return max(self.values[max(in_force, 0):stop]) / 100


def fit_heights(lanes: Sequence[Lane], spare_rows: int) -> None:
    """Give rows a tall terminal has to spare to the curves, which read better taller:
    memory from 3 up to 8 rows, GPU utilisation from 1 up to 3. Each rank of a distributed
    run has its own curves, and they share the spare rows. A memory curve that stays flat
    keeps its 3 rows: taller, it would only be a bigger block."""
    groups = max(1, sum(isinstance(lane, MemoryLane) for lane in lanes))
    spare = max(spare_rows, 0) // groups
    for lane in lanes:
        if isinstance(lane, MemoryLane):
            lane.height = 3 if lane.flat else 3 + min(5, spare // 3)
        elif isinstance(lane, UtilisationLane):
            lane.height = 1 + min(2, spare // 6)
