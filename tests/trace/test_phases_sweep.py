"""Phases derived with runs merged as the sweep finds them give what the sweep gave when it
made every piece first and merged them after (kept here as the reference), on any
intervals: overlapping, nested, touching, zero-long, of every phase and graph."""

from __future__ import annotations

import heapq

from hypothesis import given, settings
from hypothesis import strategies as st

from graphdoctor.trace.model import CAPTURE, EAGER, NONE, OWN, REPLAY, WARMUP, PhaseSpan
from graphdoctor.trace.phases import PRIORITY, Interval, derive


def reference(intervals: list[Interval], end_t: int) -> list[PhaseSpan]:
    """derive() as first written: each piece a span, then runs of a phase merged."""
    items = sorted((i.start, max(i.end, i.start + 1), i.phase, i.graph)
                   for i in intervals if i.end >= i.start >= 0)
    pieces: list[PhaseSpan] = []
    active: list[tuple[int, int, int, str, int]] = []
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
        pieces.append(PhaseSpan(phase, t, stop, graph))
        t = stop
    merged: list[PhaseSpan] = []
    for piece in pieces:
        if merged and merged[-1].phase == piece.phase:
            last = merged[-1]
            graph = last.graph if last.graph == piece.graph else NONE
            merged[-1] = PhaseSpan(last.phase, last.start, max(last.end, piece.end), graph)
        else:
            merged.append(piece)
    filled: list[PhaseSpan] = []
    cursor = 0
    for span in merged:
        if span.start > cursor:
            _eager(filled, cursor, span.start)
        filled.append(span)
        cursor = max(cursor, span.end)
    end = max(end_t, merged[-1].end if merged else 0)
    if end > cursor:
        _eager(filled, cursor, end)
    return filled


def _eager(spans: list[PhaseSpan], start: int, end: int) -> None:
    if spans and spans[-1].phase == EAGER:
        spans[-1] = PhaseSpan(EAGER, spans[-1].start, end, spans[-1].graph)
    else:
        spans.append(PhaseSpan(EAGER, start, end))


INTERVALS = st.lists(st.builds(
    Interval, st.integers(-2, 60), st.integers(-2, 80),
    st.sampled_from([OWN, CAPTURE, REPLAY, WARMUP, EAGER]),
    st.sampled_from([NONE, 0, 1, 2])), max_size=25)


@settings(max_examples=400, deadline=None)
@given(INTERVALS, st.integers(0, 100))
def test_runs_merged_while_sweeping_are_the_pieces_merged_after(
        intervals: list[Interval], end_t: int) -> None:
    assert derive(intervals, end_t) == reference(intervals, end_t)


def test_many_back_to_back_replays_are_one_replay_phase_per_graph_run() -> None:
    replays = [Interval(i * 10, i * 10 + 4, REPLAY, i // 50_000) for i in range(100_000)]
    spans = derive(replays, 1_000_000)
    assert [(s.phase, s.graph) for s in spans] == [(REPLAY, NONE), (EAGER, NONE)]
