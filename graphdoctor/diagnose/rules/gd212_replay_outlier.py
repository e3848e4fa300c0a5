"""A replay took far longer than the graph's others: something outside the graph held it.

A graph replays the same kernels every time, so its replays take about as long as each
other. One that takes ten times the median, and a millisecond more, was held by something
else: the host blocked in the launch (a full launch queue, a lock, the GIL), the GPU busy
with other work, a garbage collection, a synchronization. The finding names the replay, its
times beside the graph's medians, and what the recording saw in the same moments. The
verdicts use medians, so one such replay does not move a speedup, but a timer around it, or
a mean, would. Not counted: a graph's first replay, which uploads the graph to the GPU, and a
host time within twice the GPU's median, which a launch takes when the GPU is behind.

How to fix: see what else ran then (the evidence opens on the timeline); keep that work out
of the replay loop, and time loops with medians.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator
from typing import Any

from graphdoctor.diagnose.findings import INFO, NEUTRAL, Finding, Rule
from graphdoctor.diagnose.view import TraceView
from graphdoctor.trace.event_kinds import HOST_NOT_TIMED
from graphdoctor.trace.model import Graph
from graphdoctor.units import counted, format_duration

ID, NAME = "GD212", "replay-outlier"
FACTOR = 10  # times the median
MARGIN_NS = 1_000_000  # and this much more: a microsecond replay taking ten is no outlier
FEWEST = 10  # timed replays, for a median to hold
MOST_EVIDENCE = 20


def check(view: TraceView) -> Iterator[Finding]:
    by_graph: dict[int, list[tuple[int, Any]]] = {}
    for index, replay in view.rows("replays"):  # once: a run may hold millions
        by_graph.setdefault(replay.graph, []).append((index, replay))
    for graph in view.graphs:
        timed = by_graph.get(graph.id, [])
        if len(timed) < FEWEST:
            continue
        medians = _median([r.dur for _, r in timed if r.dur != HOST_NOT_TIMED]), \
            _median([r.gpu for _, r in timed if r.gpu >= 0])
        slow = [(n, i, r) for n, (i, r) in enumerate(timed, 1)
                if n > 1 and _slow(r, medians)]  # the first replay uploads the graph
        if slow:
            yield _finding(view, graph, slow, medians, len(timed))


def _median(values: list[int]) -> int | None:
    return int(statistics.median(values)) if values else None


def _slow(replay: Any, medians: tuple[int | None, int | None]) -> bool:
    """Beyond the medians: on the host, also beyond twice the GPU's median, which a launch
    waiting for a busy GPU (a full queue) takes by itself."""
    host, gpu = medians
    waiting = 2 * gpu if gpu is not None else 0
    host_took = replay.dur if replay.dur != HOST_NOT_TIMED else None
    return (_beyond(host_took, host) and (host_took or 0) > waiting) or \
        _beyond(replay.gpu if replay.gpu >= 0 else None, gpu)


def _beyond(took: int | None, median: int | None) -> bool:
    return took is not None and median is not None and took > FACTOR * median \
        and took > median + MARGIN_NS


def _finding(view: TraceView, graph: Graph, slow: list[tuple[int, int, Any]],
             medians: tuple[int | None, int | None], timed: int) -> Finding:
    """``slow``: (the replay's number among the graph's, its row's index, the row)."""
    number, _, worst = max(slow, key=lambda s: max(s[2].dur, s[2].gpu))
    took = f"{format_duration(_or_none(worst.dur))} on the host and " \
           f"{format_duration(_or_none(worst.gpu))} on the GPU"
    usual = f"{format_duration(medians[0])} and {format_duration(medians[1])}"
    others = f" ({counted(len(slow), 'replay')} of {timed} so slow)" if len(slow) > 1 else ""
    meanwhile = _meanwhile(view, worst.t, worst.t + max(worst.dur, worst.gpu, 0))
    return RULE.finding(
        title=f"replay {number} of graph {graph.id} took {took}, against medians of "
              f"{usual}{others}",
        explanation=(f"Graph {graph.id}'s replays take {usual} at the median; replay "
                     f"{number} took {took}. The graph is the same each time, so something "
                     f"else held it. Meanwhile the recording saw: {meanwhile}."),
        fix="See what else ran then (its evidence, on the timeline); keep it out of the "
            "replay loop, and time loops with medians, not means or a single run.",
        evidence=tuple(view.evidence("replays", i) for _, i, _ in slow[:MOST_EVIDENCE]),
        location=view.location(graph.stack), graph=graph.id,
        measurements={"replay": number, "host_ns": worst.dur, "gpu_ns": worst.gpu,
                      "median_host_ns": medians[0], "median_gpu_ns": medians[1],
                      "outliers": len(slow)})


def _or_none(ns: int) -> int | None:
    return ns if ns >= 0 else None


def _meanwhile(view: TraceView, start: int, end: int) -> str:
    """What else the recording holds between ``start`` and ``end``, in words."""
    def within(table: str) -> list[Any]:
        return [r for _, r in view.rows(table) if start <= r.t <= end]

    said = []
    if gcs := within("gc_pauses"):
        said.append(f"{counted(len(gcs), 'garbage collection')} "
                    f"({format_duration(sum(g.dur for g in gcs))} in all)")
    if syncs := within("syncs"):
        said.append(f"{counted(len(syncs), 'synchronization')}, the first a {syncs[0].kind} "
                    f"at {view.where(syncs[0].stack)}")
    if compiles := [e for e in view.trace.compile_events if start <= e.t <= end]:
        said.append(counted(len(compiles), "compile event"))
    if busy := [s.util for s in within("gpu_samples") if s.util >= 0]:
        said.append(f"the GPU {max(busy)}% busy at most")
    return "; ".join(said) or "nothing else (the hold was outside what graphdoctor records)"


RULE = Rule(ID, NAME, check, __doc__ or "", severity=INFO, category=NEUTRAL)
