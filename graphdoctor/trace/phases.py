"""Which phase the run was in at each moment: eager, warmup, capture or replay, or
graphdoctor's own work inside a capture.

Phases are derived, not recorded: captures, replays, timed calls and warmup regions are
intervals, each with a priority (a capture outranks a replay inside it, a replay outranks
the compiled call around it). A sweep keeps the highest-priority interval at each moment;
runs of the same phase are merged and the gaps between them are eager.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from graphdoctor.trace.model import CAPTURE, EAGER, NONE, OWN, REPLAY, WARMUP, PhaseSpan

PRIORITY = {OWN: 4, CAPTURE: 3, REPLAY: 2, WARMUP: 1, EAGER: 0}


@dataclass(frozen=True)
class Interval:
    start: int
    end: int
    phase: str
    graph: int = NONE


def derive(intervals: Iterable[Interval], end_t: int) -> list[PhaseSpan]:
    """Non-overlapping spans covering [0, end_t], highest priority first at each moment."""
    spans = _sweep(sorted(i for i in _valid(intervals)))
    return _fill_gaps(spans, max(end_t, spans[-1].end if spans else 0))


def _valid(intervals: Iterable[Interval]) -> Iterable[tuple[int, int, str, int]]:
    for i in intervals:
        if i.end >= i.start >= 0:
            yield (i.start, max(i.end, i.start + 1), i.phase, i.graph)


def _sweep(items: list[tuple[int, int, str, int]]) -> list[PhaseSpan]:
    """The highest-priority interval at each moment, as runs of one phase: a piece of the
    phase the last run has joins it (its graph kept only if the same), else starts one.
    Runs are merged as they are found, not each piece made first and merged after: a live
    view sweeps a replay's interval a second for every replay of the run."""
    runs: list[list[Any]] = []  # [phase, start, end, graph]
    active: list[tuple[int, int, int, str, int]] = []  # (-priority, -start, end, phase, graph)
    index, t = 0, items[0][0] if items else 0
    while index < len(items) or active:
        if not active:
            t = max(t, items[index][0])
        while index < len(items) and items[index][0] <= t:
            start, end, phase, graph = items[index]
            heapq.heappush(active, (-PRIORITY[phase], -start, end, phase, graph))
            index += 1
        while active and active[0][2] <= t:
            heapq.heappop(active)
        if not active:
            continue
        _, _, end, phase, graph = active[0]
        next_start = items[index][0] if index < len(items) else end
        stop = min(end, next_start) if next_start > t else end
        _join(runs, phase, t, stop, graph)
        t = stop
    return [PhaseSpan(*run) for run in runs]


def _join(runs: list[list[Any]], phase: str, start: int, end: int, graph: int) -> None:
    last = runs[-1] if runs else None
    if last is not None and last[0] == phase:
        last[2], last[3] = max(last[2], end), last[3] if last[3] == graph else NONE
    else:
        runs.append([phase, start, end, graph])


def _fill_gaps(spans: list[PhaseSpan], end_t: int) -> list[PhaseSpan]:
    filled: list[PhaseSpan] = []
    cursor = 0
    for span in spans:
        if span.start > cursor:
            _append_eager(filled, cursor, span.start)
        filled.append(span)
        cursor = max(cursor, span.end)
    if end_t > cursor:
        _append_eager(filled, cursor, end_t)
    return filled


def _append_eager(spans: list[PhaseSpan], start: int, end: int) -> None:
    if spans and spans[-1].phase == EAGER:
        spans[-1] = PhaseSpan(EAGER, spans[-1].start, end, spans[-1].graph)
    else:
        spans.append(PhaseSpan(EAGER, start, end))


class PhaseIndex:
    """Fast lookup of the span that holds a moment."""

    def __init__(self, spans: list[PhaseSpan]):
        self.spans = spans
        self._starts = [s.start for s in spans]

    def at(self, t: int) -> PhaseSpan | None:
        index = bisect.bisect_right(self._starts, t) - 1
        return self.spans[index] if index >= 0 else (self.spans[0] if self.spans else None)

    def phase_at(self, t: int) -> str:
        span = self.at(t)
        return span.phase if span is not None else EAGER
