"""Facts derived from a trace alone, each worked out here once: the user's frame of a stack,
the syncs the user's code made (and those between the replays of a graph), a graph's
replays and the window they span.

The rules (through :class:`graphdoctor.diagnose.view.TraceView`), the reports and the
screens all ask these questions here, so two of them never name different lines for one
event or count the same syncs two ways. Pure functions of the trace; nothing is cached
(callers that ask often keep the answers).

The user's frame of a stack has one policy: the innermost frame of the user's own code;
where the stack has none, the innermost frame of a library (not torch's, not Python's): the
library call the user made is where a fix goes. A stack of torch's and Python's frames only
has no user frame.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import pairwise

from graphdoctor.trace.event_kinds import HOST_NOT_TIMED, Replay, Sync
from graphdoctor.trace.model import LIBRARY, REPLAY, USER, Frame, Function, Graph, Trace
from graphdoctor.trace.names import INTERNAL_SYNC

SourceLine = tuple[str, int]
"""A line of code: (file, line number)."""

IndexedSync = tuple[int, Sync]
"""A sync with its row in the trace's syncs table (what evidence points at)."""

# Where a culprit is looked for, most wanted first (see the module's docstring).
CULPRIT_KINDS = (USER, LIBRARY)


# -- the user's frame --------------------------------------------------------------------
def culprit_of(frames: Sequence[Frame]) -> Frame | None:
    """The user's frame of a stack (outermost first), by the one policy above."""
    for kind in CULPRIT_KINDS:
        found = [frame for frame in frames if frame.kind == kind]
        if found:
            return found[-1]
    return None


def culprit_frame(trace: Trace, stack: int) -> Frame | None:
    """The user's frame of one of the trace's stacks; None for a stack with none (or -1)."""
    return culprit_of(trace.stack(stack))


def culprit_line(frames: Sequence[Frame]) -> SourceLine | None:
    """The (file, line) of the user's frame of a stack, if it has one."""
    frame = culprit_of(frames)
    return (frame.file, frame.line) if frame is not None else None


def call_into_library(trace: Trace, stack: int) -> Frame | None:
    """The user's line that called into library code: the last user frame before the
    stack's first library frame, or None where the stack has no such pair."""
    caller = None
    for frame in trace.stack(stack):
        if frame.kind == LIBRARY:
            return caller
        if frame.kind == USER:
            caller = frame
    return None


# -- the user's syncs --------------------------------------------------------------------
def is_users_sync(trace: Trace, sync: Sync) -> bool:
    """Whether the user's code made this sync: not one torch recorded as its own, and the
    stack ends in user or library code (a sync from deep inside torch is torch's doing)."""
    frames = trace.stack(sync.stack)
    return (sync.kind != INTERNAL_SYNC and culprit_of(frames) is not None
            and frames[-1].kind in CULPRIT_KINDS)


def user_syncs(trace: Trace, rows: Iterable[IndexedSync]) -> list[IndexedSync]:
    """Those of ``rows`` the user's code made (:func:`is_users_sync`)."""
    return [(index, sync) for index, sync in rows if is_users_sync(trace, sync)]


def syncs_by_line(trace: Trace, rows: Iterable[IndexedSync]) -> dict[SourceLine, list[int]]:
    """The rows' indexes by the user's line they came from, in first-seen order."""
    by_line: dict[SourceLine, list[int]] = {}
    for index, sync in rows:
        line = culprit_line(trace.stack(sync.stack))
        if line is not None:
            by_line.setdefault(line, []).append(index)
    return by_line


# -- replays and what happens between them ------------------------------------------------
def replays_of(trace: Trace, graph: Graph) -> list[Replay]:
    """The graph's timed replays, in the order they ran."""
    return sorted(trace.tables["replays"].rows_where("graph", graph.id), key=lambda r: r.t)


def replay_count(trace: Trace, graph: Graph) -> int:
    """How often the graph replayed (:func:`replay_counts`)."""
    timed = len(trace.tables["replays"].positions_where("graph", graph.id))
    return max(timed, trace.replay_counts.get(graph.id, 0))


def replay_counts(trace: Trace) -> dict[int, int]:
    """How often each graph replayed: its timed replays, or the recorder's running count
    where that is larger (a run that ended before its last replays were timed)."""
    timed = Counter(trace.tables["replays"].column("graph"))
    return {graph: max(timed[graph], trace.replay_counts.get(graph, 0))
            for graph in timed.keys() | trace.replay_counts.keys()}


def replay_window(trace: Trace, graph: Graph) -> tuple[int, int] | None:
    """From the start of the graph's first replay to the end of its last; None with fewer
    than two replays, which have nothing between them."""
    table = trace.tables["replays"]
    mine = table.positions_where("graph", graph.id)
    if len(mine) < 2:
        return None
    t, dur = table.column("t"), table.column("dur")
    first = min(mine, key=lambda i: (t[i], i))  # as replays_of orders them: by time, stably
    last = max(mine, key=lambda i: (t[i], i))
    return t[first], t[last] + max(0, dur[last])


def replay_gaps(replays: Sequence[Replay]) -> tuple[int, ...]:
    """Host time from each replay's end to the next one's start; none where the replays'
    host times were not taken (launches CUPTI saw are placed where the GPU ran them)."""
    if any(r.dur == HOST_NOT_TIMED for r in replays):
        return ()
    return tuple(max(0, b.t - (a.t + a.dur)) for a, b in pairwise(replays))


def syncs_between_replays(trace: Trace, graph: Graph) -> list[IndexedSync]:
    """The user's syncs of the replay phase inside the graph's replay window."""
    window = replay_window(trace, graph)
    if window is None:
        return []
    return [(i, s) for i, s in _replay_phase_syncs(trace) if window[0] <= s.t <= window[1]]


def syncs_between_any_replays(trace: Trace) -> list[IndexedSync]:
    """The user's syncs of the replay phase inside some graph's replay window, each once."""
    windows = [w for g in trace.graphs if (w := replay_window(trace, g)) is not None]
    return [(i, s) for i, s in _replay_phase_syncs(trace)
            if any(start <= s.t <= end for start, end in windows)]


def _replay_phase_syncs(trace: Trace) -> list[IndexedSync]:
    rows = ((i, s) for i, s in enumerate(trace.tables["syncs"]) if s.phase == REPLAY)
    return user_syncs(trace, rows)


# -- graphs and functions -----------------------------------------------------------------
def user_graphs(trace: Trace) -> list[Graph]:
    """The graphs the user made: torch's own pool-keeping capture is left out."""
    return [g for g in trace.graphs if not g.internal]


def graph_by_id(trace: Trace, graph_id: int) -> Graph | None:
    return next((g for g in trace.graphs if g.id == graph_id), None)


def function_by_id(trace: Trace, function_id: int) -> Function | None:
    return next((f for f in trace.functions if f.id == function_id), None)


def pool_names(trace: Trace) -> dict[str, str]:
    """A readable name for each graph's memory pool in place of torch's id pair ("(1, 0)"):
    "own" where one graph keeps the pool to itself, "shared 1", "shared 2"... in the order the
    pools were first used where graphs share one or it came from the script (``pool=``)."""
    users = Counter(g.pool for g in trace.graphs if g.pool)
    shared = [g.pool for g in trace.graphs if g.pool and (users[g.pool] > 1 or g.shared_pool)]
    names = dict.fromkeys(users, "own")
    names.update({pool: f"shared {n}" for n, pool in enumerate(dict.fromkeys(shared), 1)})
    return names


def pool_name(trace: Trace, graph: Graph) -> str:
    """The graph's pool as :func:`pool_names` names it; "" where it has none (a failed
    capture)."""
    return pool_names(trace).get(graph.pool, "")
