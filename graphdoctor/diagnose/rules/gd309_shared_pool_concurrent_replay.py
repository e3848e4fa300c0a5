"""Two graphs that share a memory pool were replayed on two streams with nothing ordering them.

Graphs captured into one pool (``pool=g0.pool()``, ``torch.cuda.graph_pool_handle()``) reuse
each other's memory: the temporaries of one are the temporaries of the other. PyTorch allows
it only where their replays run one after another. Replayed on two streams, with no event,
``wait_stream`` or sync between the first replay and the second, both graphs can run at once
and each overwrites what the other is still reading: results are silently wrong, and only
when the timing lines up. PyTorch's own test of it (``test_graph_concurrent_replay``)
expects the corruption.

Seen on the replays whose stream graphdoctor reads (each graph's first ones, then a sample),
for graphs captured with an explicit pool.

How to fix: make the second replay's stream wait for the first
(``s1.wait_stream(s0)`` after ``g0.replay()``, or an event recorded after it), replay both
on one stream, or give each graph its own pool.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from graphdoctor.diagnose.findings import ERROR, UNSAFE, Finding, Rule
from graphdoctor.diagnose.view import TraceView
from graphdoctor.trace.model import Graph

ID, NAME = "GD309", "shared-pool-concurrent-replay"
ORDERING_SYNCS = frozenset({"device_synchronize"})  # syncs that order every stream
WAITS = frozenset({"wait_event", "event_wait"})
RECORDS = frozenset({"record", "record_event"})


def check(view: TraceView) -> Iterator[Finding]:
    pools = _pools(view)
    if not pools:
        return
    numbered = sorted(enumerate(view.trace.tables.get("replay_sites", ())),
                      key=lambda pair: pair[1].t)
    sites = [site for _, site in numbered]
    said: set[tuple[int, int]] = set()
    for index, later in enumerate(sites):
        earlier = _unordered_before(view, sites, index, pools)
        if earlier is not None and (earlier.graph, later.graph) not in said:
            said.add((earlier.graph, later.graph))
            yield _finding(view, earlier, later, numbered[index][0])


def _pools(view: TraceView) -> dict[int, str]:
    """Graph id -> its pool, for manual graphs captured into a pool another one shares."""
    by_pool: dict[str, list[Graph]] = {}
    for graph in view.manual_graphs():
        if graph.pool:
            by_pool.setdefault(graph.pool, []).append(graph)
    return {g.id: pool for pool, graphs in by_pool.items() if len(graphs) > 1 for g in graphs}


def _unordered_before(view: TraceView, sites: list[Any], index: int,
                      pools: dict[int, str]) -> Any:
    """The replay of another graph of the same pool, on another stream, that ``sites[index]``
    followed with nothing ordering it after that replay; None where there is none."""
    later = sites[index]
    pool = pools.get(later.graph)
    for earlier in reversed(sites[:index]):
        if earlier.graph == later.graph or pools.get(earlier.graph) != pool or pool is None:
            continue
        if earlier.stream != later.stream and not _ordered(view, earlier, later):
            return earlier
        return None  # the latest replay of the pool before it decides
    return None


def _ordered(view: TraceView, earlier: Any, later: Any) -> bool:
    """Whether a sync or a stream operation between the two replays makes ``later``'s stream
    wait for ``earlier``'s."""
    for sync in view.trace.tables["syncs"]:
        if earlier.t < sync.t < later.t and (sync.kind in ORDERING_SYNCS
                                             or sync.stream == earlier.stream):
            return True
    recorded: set[int] = set()  # events recorded on the earlier stream after its replay
    for op in view.trace.tables["stream_ops"]:
        if not earlier.t < op.t < later.t:
            continue
        if op.op in RECORDS and op.stream == earlier.stream:
            recorded.add(op.other)
        elif op.stream == later.stream and (
                (op.op == "wait_stream" and op.other == earlier.stream)
                or (op.op in WAITS and op.other in recorded)):
            return True
    return False


def _finding(view: TraceView, earlier: Any, later: Any, index: int) -> Finding:
    first, second = earlier.graph, later.graph
    return RULE.finding(
        title=f"graph {second} was replayed at {view.where(later.stack)} on another stream "
              f"while graph {first}, which shares its memory pool, may still run",
        explanation=(f"Graphs {first} and {second} were captured into one memory pool, so "
                     "they reuse each other's memory. Graph "
                     f"{first} was replayed at {view.where(earlier.stack)} on stream "
                     f"{earlier.stream:#x}, then graph {second} on stream {later.stream:#x}, "
                     "with no event, wait_stream or sync between them: both can run at once "
                     "and overwrite each other's temporaries, so results are wrong whenever "
                     "they overlap."),
        fix=(f"Make the second stream wait for the first after graph {first}'s replay "
             "(second_stream.wait_stream(first_stream)), replay both on one stream, or "
             "capture each graph into its own pool."),
        evidence=(view.evidence("replay_sites", index),),
        location=view.location(later.stack), graph=second,
        measurements={"first_graph": first, "first_stream": earlier.stream,
                      "second_stream": later.stream, "first_at": view.where(earlier.stack)})


RULE = Rule(ID, NAME, check, __doc__ or "", severity=ERROR, category=UNSAFE)
