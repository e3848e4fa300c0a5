"""TraceView: the read-only queries that rules share.

Rules ask questions ("which syncs ran inside this capture?", "what first went wrong in this
graph?"); the answers live here once, so two rules never disagree about them. Everything is
computed lazily and cached: a view is built per diagnosis and never changes.

The facts that need only the trace (a stack's user frame, the user's syncs, a graph's
replays, where a line is in words) are :mod:`graphdoctor.facts.queries`' and
:mod:`graphdoctor.facts.locations`', which the reports and the viewer read too; the view
asks them on the rules' behalf, so a rule and a screen never name different lines.

Two answers are computed elsewhere but kept here, once per graph: a graph's measurement
(:func:`.measure.of_graph`) and a failed capture's cause (:func:`.failures.cause_of`). Their
caches are declared on the view, each with its type (:class:`PerGraph`): a view keeps those
two answers and nothing else a rule might want to stash.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from graphdoctor.diagnose.findings import Evidence, LineReader, Location, no_source
from graphdoctor.facts import locations, queries
from graphdoctor.facts.stream_names import stream_names
from graphdoctor.trace.event_kinds import BY_NAME, rows_of
from graphdoctor.trace.model import (
    NONE,
    Collective,
    CompileEvent,
    ErrorLink,
    ExceptionRecord,
    Frame,
    Function,
    Graph,
    Trace,
)
from graphdoctor.trace.names import (
    COMPILE,
    COMPILED,
    COMPILED_FUNCTION,
    GRAPHED_FUNCTION,
)
from graphdoctor.trace.phases import PhaseIndex

if TYPE_CHECKING:  # these modules compute the answers and import this one
    from graphdoctor.diagnose.failures import Cause
    from graphdoctor.diagnose.measure import Measurement


Answer = TypeVar("Answer")


class PerGraph(Generic[Answer]):
    """One shared query's answers, one per graph, each computed the first time it is asked."""

    def __init__(self) -> None:
        self._answers: dict[int, Answer] = {}

    def get(self, graph: Graph, compute: Callable[[Graph], Answer]) -> Answer:
        if graph.id not in self._answers:
            self._answers[graph.id] = compute(graph)
        return self._answers[graph.id]


class TraceView:
    """One trace's queries; in a multi-rank run, ``rank`` is this trace's rank and ``peers``
    maps every rank (this one included) to its trace, for the rules that compare ranks;
    ``read_line`` reads the recorded files' lines where they are at hand (during the run);
    ``baseline`` is a second run of the script with CUDA graphs off, whose eager calls
    measure what this run did not run eagerly (``graphdoctor run --baseline``)."""

    def __init__(self, trace: Trace, rank: int = NONE, peers: dict[int, Trace] | None = None,
                 read_line: LineReader = no_source, baseline: Trace | None = None):
        self.trace = trace
        self.rank = rank
        self.peers = peers or {}
        self.read_line = read_line
        self.baseline = baseline
        # answers several rules need, kept once so that they never disagree about them
        self.measurements: PerGraph[Measurement] = PerGraph()
        self.causes: PerGraph[Cause] = PerGraph()

    # -- graphs and functions ------------------------------------------------------------
    @functools.cached_property
    def stream_names(self) -> dict[int, str]:
        """One name per stream, as the timeline and event details give it (s1, s2...)."""
        return stream_names(self.trace)

    @functools.cached_property
    def graphs(self) -> list[Graph]:
        """The user's graphs: torch's own pool-keeping capture is left out."""
        return queries.user_graphs(self.trace)

    def graph(self, graph_id: int) -> Graph | None:
        return queries.graph_by_id(self.trace, graph_id)

    def function(self, fn_id: int) -> Function | None:
        return queries.function_by_id(self.trace, fn_id)

    def graphs_of(self, fn_id: int) -> list[Graph]:
        return [g for g in self.graphs if g.function == fn_id]

    @functools.cached_property
    def compiled_functions(self) -> list[Function]:
        return [f for f in self.trace.functions if f.kind == COMPILED_FUNCTION]

    @functools.cached_property
    def graphed_functions(self) -> list[Function]:
        """The callables handed to make_graphed_callables."""
        return [f for f in self.trace.functions if f.kind == GRAPHED_FUNCTION]

    def manual_graphs(self) -> list[Graph]:
        return [g for g in self.graphs if g.api != COMPILED]

    # -- locations: the answers are facts.queries' and facts.locations', shared with the
    # reports and the viewer; the rules ask them through the view -------------------------
    def culprit_frame(self, stack: int) -> Frame | None:
        """The user's frame of a stack (:func:`.queries.culprit_of` says which)."""
        return queries.culprit_frame(self.trace, stack)

    def location(self, stack: int) -> Location | None:
        frame = self.culprit_frame(stack)
        return Location(frame.file, frame.line, frame.func) if frame else None

    def call_into_library(self, stack: int) -> Frame | None:
        """The user's line that called into library code, or None."""
        return queries.call_into_library(self.trace, stack)

    def compile_stack_before(self, t: int) -> int:
        """The stack of the latest compile that began at or before time t (the user's call
        that ran into it), or -1."""
        starts = [e for e in self.trace.compile_events if e.kind == COMPILE and e.t <= t]
        return max(starts, key=lambda e: e.t).stack if starts else NONE

    def where(self, stack: int) -> str:
        """``file.py:12`` for messages; "an unknown line" when the stack has no user frame."""
        return locations.where(self.trace, stack)

    @staticmethod
    def where_frame(frame: Frame | None) -> str:
        """``file.py:12`` of a frame, for messages."""
        return locations.spot(frame)

    # -- rows ----------------------------------------------------------------------------
    def rows(self, table: str) -> Iterator[tuple[int, Any]]:
        """(index, row) of a table, for evidence pointers."""
        return enumerate(self.trace.tables[table])

    def in_capture(self, table: str, graph: Graph) -> list[tuple[int, Any]]:
        """(index, row) of the table's rows made during the graph's capture."""
        rows = self.trace.tables[table]
        return [(i, rows[i]) for i in rows.positions_where("graph", graph.id)]

    def user_syncs(self, table_rows: list[tuple[int, Any]]) -> list[tuple[int, Any]]:
        """Those of the syncs' rows the user's code made (:func:`.queries.is_users_sync`)."""
        return queries.user_syncs(self.trace, table_rows)

    # -- failures ------------------------------------------------------------------------
    def exceptions_of(self, graph: Graph) -> list[tuple[int, ExceptionRecord]]:
        return [(i, e) for i, e in enumerate(self.trace.exceptions) if e.graph == graph.id]

    def first_error(self, graph: Graph) -> tuple[int, ErrorLink] | None:
        """The first error of a failed capture: the root of the earliest recorded chain."""
        recorded = self.exceptions_of(graph)
        if not recorded:
            return None
        index, record = min(recorded, key=lambda item: item[1].t)
        return (index, record.chain[0]) if record.chain else None

    def errors_in_window(self, graph: Graph, where: str) -> list[tuple[int, ExceptionRecord]]:
        end = graph.capture_end if graph.capture_end != NONE else self.end_time
        return [(i, e) for i, e in enumerate(self.trace.exceptions)
                if e.where == where and graph.capture_start <= e.t <= end]

    def links(self, graph: Graph) -> list[ErrorLink]:
        return [link for _, e in self.exceptions_of(graph) for link in e.chain]

    # -- compile ------------------------------------------------------------------------
    def compile_events(self, kind: str) -> list[tuple[int, CompileEvent]]:
        return [(i, e) for i, e in enumerate(self.trace.compile_events) if e.kind == kind]

    def function_at(self, t: int) -> int:
        """The compiled function whose call was running at time t, or -1."""
        calls = self.trace.tables["calls"]
        for row in calls:
            if row.t <= t <= row.t + row.dur and (found := self.function(row.fn)) is not None \
                    and found.kind == COMPILED_FUNCTION:
                return found.id
        return NONE

    def last_function_before(self, t: int) -> int:
        """The compiled function called most recently before time t, or -1."""
        latest, fn = -1, NONE
        for row in self.trace.tables["calls"]:
            if latest < row.t <= t and (found := self.function(row.fn)) is not None \
                    and found.kind == COMPILED_FUNCTION:
                latest, fn = row.t, row.fn
        return fn

    # -- time ------------------------------------------------------------------------------
    @functools.cached_property
    def phase_index(self) -> PhaseIndex:
        return PhaseIndex(self.trace.phases)

    @functools.cached_property
    def end_time(self) -> int:
        return self.trace.phases[-1].end if self.trace.phases else 0

    def evidence(self, kind: str, index: int, note: str = "", rank: int | None = None) -> Evidence:
        return Evidence(kind, index, note, self.rank if rank is None else rank)

    def time_of(self, evidence: Evidence) -> int | None:
        """When the event an evidence points at happened (a graph: its capture's start)."""
        trace = self.peers.get(evidence.rank, self.trace)
        kind = BY_NAME.get(evidence.kind)
        rows = rows_of(trace, kind) if kind else trace.graphs if evidence.kind == "graphs" else ()
        if not 0 <= evidence.index < len(rows):
            return None
        row = rows[evidence.index]
        return int(getattr(row, "t", getattr(row, "capture_start", -1)))

    # -- ranks ------------------------------------------------------------------------------
    @property
    def first_rank(self) -> bool:
        """Whether rules that compare ranks run from this view (they run once per run)."""
        return bool(self.peers) and self.rank == min(self.peers)

    def collective_sequences(self) -> dict[str, list[tuple[int, Collective]]]:
        """(index, row) of this trace's collectives per process group, in issue order."""
        by_group: dict[str, list[tuple[int, Collective]]] = {}
        for index, row in self.rows("collectives"):
            by_group.setdefault(row.group, []).append((index, row))
        for rows in by_group.values():
            rows.sort(key=lambda item: item[1].seq)
        return by_group

    def peer_view(self, rank: int) -> TraceView:
        return TraceView(self.peers[rank], rank, self.peers, self.read_line)


def mib(size: int) -> str:
    """``3.0 MiB`` or ``512 KiB`` in a finding's words: coarser than
    :func:`graphdoctor.units.format_bytes` (no bytes, no GiB), and kept so because committed
    reports' findings say it this way."""
    return f"{size / 2**20:.1f} MiB" if size >= 2**20 else f"{size / 2**10:.0f} KiB"


def ranks_named(ranks: Sequence[int]) -> str:
    """``rank 1``, ``ranks 0, 2`` or ``ranks 0-62, 64``: for messages."""
    return f"rank{'' if len(ranks) == 1 else 's'} {rank_ranges(ranks)}"


def rank_ranges(ranks: Sequence[int]) -> str:
    """``0, 2`` or ``0-62, 64``: three or more ranks in a row as a range (64 ranks read as
    one short phrase)."""
    runs: list[range] = []
    for rank in sorted(ranks):
        if runs and rank == runs[-1].stop:
            runs[-1] = range(runs[-1].start, rank + 1)
        else:
            runs.append(range(rank, rank + 1))
    return runs_text(runs)


def runs_text(runs: Sequence[range]) -> str:
    """:func:`rank_ranges`' text of ranks given as runs in order (a run of a billion ranks
    is said as cheaply as one of three)."""
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 2 else ", ".join(map(str, r))
                     for r in runs if len(r))


def times(count: int) -> str:
    """``once``, ``twice``, ``3 times``: how often, for messages."""
    return "once" if count == 1 else "twice" if count == 2 else f"{count} times"
