"""Totals for the Allocations and Graphs screens: allocator activity grouped by phase, pool
or call site, and each graph's capture, replays and timings. Pure; no Textual import.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace
from itertools import compress

from graphdoctor.facts import queries
from graphdoctor.facts.locations import file_name, frame_text
from graphdoctor.facts.queries import culprit_of
from graphdoctor.trace.event_kinds import HOST_NOT_TIMED
from graphdoctor.trace.model import NONE, Frame, Graph, Trace
from graphdoctor.trace.names import ALLOC_ACTION

GROUPINGS = {"phase": "phase", "pool": "pool", "site": "stack"}
NO_STACK, NO_USER_LINE = "(no stack recorded)", "(no line of the user's code)"


@dataclass(frozen=True)
class AllocGroup:
    """Allocator activity of one phase, pool or call site."""

    key: str
    allocs: int = 0
    allocated: int = 0
    frees: int = 0
    freed: int = 0
    segments: int = 0
    reserved: int = 0
    largest: int = 0
    largest_row: int = NONE  # the row of the largest allocation, to show on the timeline
    stack: int = NONE  # a stack of this group (call sites only)
    rank: int = NONE  # whose allocations, in a multi-rank report

    @property
    def net(self) -> int:
        return self.allocated - self.freed

    @property
    def label(self) -> str:
        return self.key if self.rank == NONE else f"r{self.rank} {self.key}"


ALLOC_COLUMNS = ("key", "allocs", "allocated", "frees", "freed", "net", "reserved", "largest")


class _Tally:
    """Running totals of one group while the rows are read."""

    __slots__ = ("allocs", "allocated", "frees", "freed", "segments", "reserved", "largest",
                 "largest_row", "stack")

    def __init__(self, stack: int) -> None:
        self.allocs = self.allocated = self.frees = self.freed = 0
        self.segments = self.reserved = self.largest = 0
        self.largest_row, self.stack = NONE, stack

    def add(self, row: int, action: str, size: int) -> None:
        if action == ALLOC_ACTION:
            self.allocs += 1
            self.allocated += size
            if size > self.largest:
                self.largest, self.largest_row = size, row
        elif action == "free_completed":
            self.frees += 1
            self.freed += size
        elif action == "segment_alloc":
            self.segments += 1
            self.reserved += size

    def merged_into(self, other: _Tally) -> None:
        for name in ("allocs", "allocated", "frees", "freed", "segments", "reserved"):
            setattr(other, name, getattr(other, name) + getattr(self, name))
        if self.largest > other.largest:
            other.largest, other.largest_row = self.largest, self.largest_row


def group_allocs(trace: Trace, by: str, rank: int = NONE) -> list[AllocGroup]:
    """Allocator activity grouped ``by`` "phase", "pool" or "site" (the user's line), largest
    allocated total first; ``rank`` is the trace's, in a multi-rank report."""
    data = trace.tables["allocs"].data
    tallies: dict[object, _Tally] = {}
    keys = data[GROUPINGS[by]]
    for row, (key, action, size) in enumerate(zip(keys, data["action"], data["size"],
                                                  strict=True)):
        tally = tallies.get(key)
        if tally is None:
            tally = tallies[key] = _Tally(key if by == "site" else NONE)
        tally.add(row, action, size)
    if by == "site":
        tallies = _by_site(trace, tallies)
    groups = [_group(str(key), tally, rank) for key, tally in tallies.items()]
    return sort_groups(groups, "allocated", descending=True)


def _by_site(trace: Trace, by_stack: dict[object, _Tally]) -> dict[object, _Tally]:
    """Stacks merged by the line of user code they come from."""
    sites: dict[object, _Tally] = {}
    for stack, tally in by_stack.items():
        site = _site(trace.stack(int(stack)))  # type: ignore[call-overload]
        if site not in sites:
            sites[site] = _Tally(tally.stack)
        tally.merged_into(sites[site])
    return sites


def _site(frames: list[Frame]) -> str:
    """A call site's key: ``file.py:12 in f`` of the stack's user frame."""
    frame = culprit_of(frames)
    if frame is None:
        return NO_USER_LINE if frames else NO_STACK
    return frame_text(frame, path=file_name)


def _group(key: str, tally: _Tally, rank: int) -> AllocGroup:
    names = [f.name for f in fields(AllocGroup) if f.name not in ("key", "rank")]
    return AllocGroup(key, **{name: getattr(tally, name) for name in names}, rank=rank)


def sort_groups(groups: Sequence[AllocGroup], column: str,
                descending: bool = False) -> list[AllocGroup]:
    """Groups ordered by one of :data:`ALLOC_COLUMNS`; ties keep their key order, and the
    key orders by rank first."""
    by_key: Callable[[AllocGroup], tuple[int, str]] = lambda g: (g.rank, g.key)  # noqa: E731
    value: Callable[[AllocGroup], object] = (  # noqa: E731
        by_key if column == "key" else lambda g: getattr(g, column))
    ordered = sorted(groups, key=by_key)
    return sorted(ordered, key=value, reverse=descending)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Timing:
    """Median host and GPU time of a set of calls or replays (ns; None when none ran)."""

    count: int = 0
    host: float | None = None
    gpu: float | None = None


@dataclass(frozen=True)
class GraphRow:
    graph: Graph
    function: str
    replays: Timing
    eager: Timing  # the same work run eagerly: the graph's callee or compiled function
    first_replay: int = NONE  # row in the replays table
    index: int = NONE  # the graph's position in its trace's list of graphs
    rank: int = NONE  # whose graph, in a multi-rank report (graph ids repeat across ranks)
    pool: str = ""  # its memory pool by name (queries.pool_names)


def graph_rows(trace: Trace, rank: int = NONE) -> list[GraphRow]:
    """One row per graph with its replays' and its eager steps' timings."""
    replays = trace.tables["replays"].data
    by_graph = _grouped(replays["graph"], replays["dur"], replays["gpu"])
    calls = trace.tables["calls"].data
    eager = [mode == "eager" for mode in calls["mode"]]
    by_function = _grouped(list(compress(calls["fn"], eager)), list(compress(calls["dur"], eager)),
                           list(compress(calls["gpu"], eager)))
    counts, pools = queries.replay_counts(trace), queries.pool_names(trace)
    return [GraphRow(graph, _function_name(trace, graph),
                     _replays(by_graph.get(graph.id, []), counts.get(graph.id, 0)),
                     _timing([t for fn in _functions(graph) for t in by_function.get(fn, [])]),
                     _first(replays["graph"], graph.id), index, rank, pools.get(graph.pool, ""))
            for index, graph in enumerate(trace.graphs)]


def _replays(timed: list[tuple[int, int]], counted: int) -> Timing:
    """The replays' timings, counted as the verdicts count them (:func:`queries.replay_counts`:
    those the run ended before timing too)."""
    return replace(_timing(timed), count=counted)


Timings = dict[int, list[tuple[int, int]]]  # key -> [(host ns, GPU ns)]


def _grouped(keys: list[int], hosts: list[int], gpus: list[int]) -> Timings:
    groups: Timings = {}
    for key, host, gpu in zip(keys, hosts, gpus, strict=True):
        groups.setdefault(key, []).append((host, gpu))
    return groups


def _functions(graph: Graph) -> list[int]:
    """The functions whose eager calls do the graph's work: its callees or compiled function."""
    return [fn for fn in (graph.function, *graph.callees) if fn != NONE]


def _function_name(trace: Trace, graph: Graph) -> str:
    ids = _functions(graph)
    return ", ".join(f.name for f in trace.functions if f.id in ids) or "—"


def _timing(times: list[tuple[int, int]]) -> Timing:
    host = [h for h, _ in times if h != HOST_NOT_TIMED]
    gpu = [g for _, g in times if g >= 0]
    return Timing(len(times), statistics.median(host) if host else None,
                  statistics.median(gpu) if gpu else None)


def _first(column: list[int], value: int) -> int:
    try:
        return column.index(value)
    except ValueError:
        return NONE
