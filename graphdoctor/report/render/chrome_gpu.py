"""What ran on the GPU, for the Chrome trace (:mod:`.chrome_trace`): each replay's GPU span
on its stream's track, the graph's nodes inside it on tracks of their own, and the eager
kernels a native program ran beside them.

- A replay's GPU span starts at its launch or when its stream's replay before it ended
  (a stream runs in order; the recording has the GPU time, not the GPU start), as the
  viewer's timeline draws it. A replay whose GPU time was not taken (outside the sample)
  has no GPU span: where it ran is not known.
- Its nodes are where :mod:`graphdoctor.facts.node_schedule` estimates they ran, as the
  timeline's node lane draws them: each row of the schedule a track (``stream 7 nodes
  (estimated, equal shares)``, ``stream 7 nodes 2 (...)``), each node a slice named by its
  kernel's short name (or its type), with its graph, its number and whether it is on the
  longest chain.
  Up to :data:`MOST_NODE_SLICES` of them, replay after replay; ``otherData.graph_nodes``
  says in how many replays.
- A flow goes from each launch (the host's ``replay()``) to the replay on the GPU, and a
  second to its first node, so Perfetto's arrows lead from the launch to the kernels.
- Eager kernels (``tables.kernels``, recorded for native programs) are slices on their
  stream's track, with their own GPU start and length.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import Any, Protocol

from graphdoctor.clean_text import clean
from graphdoctor.facts.node_schedule import NodeSchedule, schedule
from graphdoctor.trace.anatomy import Anatomy, short_kernel_name
from graphdoctor.trace.model import Trace

Event = dict[str, Any]
NODE_FLOW = 1 << 40  # a replay's flow to its first node: the replay's flow id plus this
ESTIMATED_START = "estimated: launch or end of previous replay"
MOST_NODE_SLICES = 250_000  # beyond, replays keep their span but not their nodes (~40 MB)
# how a nodes track's nodes were placed, said in its name
ESTIMATED, SHARES = "estimated from kernel times", "estimated, equal shares"


class Export(Protocol):
    """What the GPU part needs of :class:`.chrome_trace._Export`."""

    trace: Trace
    flow_base: int
    device: int

    def keep(self, t: int, dur: int = 0) -> bool: ...
    def stream_lane(self, stream: int, device: int, suffix: str = "") -> tuple[int, int]: ...


def slice_event(pid: int, tid: int, name: str, t: int, dur: int, cat: str, /,
                **args: Any) -> Event:
    return {"ph": "X", "pid": pid, "tid": tid, "name": name, "cat": cat, "ts": us(t),
            "dur": us(max(0, dur)), "args": args, "_t": t, "_end": t + max(0, dur)}


def us(ns: int) -> float:
    """Nanoseconds to the format's microseconds, keeping nanosecond precision."""
    return round(ns / 1000, 3)


class Plans:
    """Each graph's node schedule, made once, and how many node slices were written."""

    def __init__(self, trace: Trace) -> None:
        self.found: dict[int, tuple[Anatomy, NodeSchedule]] = {}
        for graph in trace.graphs:
            plan = schedule(graph.anatomy) if graph.anatomy is not None else None
            if graph.anatomy is not None and plan is not None:
                self.found[graph.id] = (graph.anatomy, plan)
        self.written = 0
        self.replays_with_nodes = 0
        self.replays_without = 0


def replays_on_gpu(x: Export, plans: Plans) -> Iterator[Event]:
    """Each timed replay's GPU span on its stream, then its nodes."""
    devices = {g.id: g.device for g in x.trace.graphs}
    stream_end: dict[int, int] = defaultdict(int)
    for index, replay in enumerate(x.trace.tables["replays"]):
        if replay.gpu < 0:
            continue
        start = max(replay.t, stream_end[replay.stream])
        stream_end[replay.stream] = start + replay.gpu
        if not x.keep(start, replay.gpu):
            continue
        device = devices.get(replay.graph, x.device)
        pid, tid = x.stream_lane(replay.stream, device)
        event = slice_event(pid, tid, f"graph {replay.graph}", start, replay.gpu, "gpu",
                            graph=replay.graph, start=ESTIMATED_START)
        event["_flow_end"] = x.flow_base + index
        yield event
        yield from _nodes(x, plans, replay.graph, replay.stream, device, (start, replay.gpu),
                          x.flow_base + index)


def _nodes(x: Export, plans: Plans, graph: int, stream: int, device: int,
           span: tuple[int, int], flow: int) -> Iterator[Event]:
    plan = plans.found.get(graph)
    if plan is None:
        return
    found, nodes = plan
    if plans.written + nodes.placed > MOST_NODE_SLICES:
        plans.replays_without += 1
        return
    plans.replays_with_nodes += 1
    plans.written += nodes.placed
    start, length = span
    names = [clean(short_kernel_name(found.kernel_of(n)) or found.type_of(n))
             for n in range(found.nodes)]
    first = min((n for row in nodes.rows for n in row.nodes), key=lambda n: n.start)
    for number, row in enumerate(nodes.rows):
        pid, tid = x.stream_lane(stream, device, f" nodes{f' {number + 1}' if number else ''}"
                                                 f" ({ESTIMATED if nodes.timed else SHARES})")
        for node in row.nodes:
            at = start + round(node.start * length)
            event = slice_event(pid, tid, names[node.node], at,
                                start + round(node.end * length) - at, "node", graph=graph,
                                node=node.node, chain=node.on_chain)
            if node is first:
                event["_flow_end"], event["_flow_id"] = flow, flow + NODE_FLOW
            yield event


def eager_kernels(x: Export) -> Iterator[Event]:
    """The kernels launched outside a graph, on their streams, as CUPTI saw them run."""
    for kernel in x.trace.tables["kernels"]:
        if x.keep(kernel.t, kernel.dur):
            pid, tid = x.stream_lane(kernel.stream, x.device)
            yield slice_event(pid, tid, clean(kernel.name), kernel.t, kernel.dur, "kernel",
                              stream=kernel.stream, phase=kernel.phase, eager=True)


def node_note(plans: list[Plans]) -> str:
    """What otherData says of the nodes: in how many replays, and why not in the others."""
    drawn = sum(p.replays_with_nodes for p in plans)
    left = sum(p.replays_without for p in plans)
    if not drawn and not left:
        return "none: no replayed graph kept its nodes"
    said = (f"estimated, in {drawn} replays (those with a GPU time): each node placed by its "
            "dependencies, as long as its kernel in the profiled replay (run --full), else an "
            "equal share (the track's name says which); chain: on the longest chain")
    return said + (f"; left out of {left} more, past {MOST_NODE_SLICES:,} node slices "
                   "(export fewer phases with --phase)" if left else "")
