"""Where each node of a captured graph runs within one replay, as shares of the replay.

The recorder keeps a graph's nodes and edges (``Anatomy.nodes_kept``) but no node's own
start: a replay is timed as a whole. So the schedule is an estimate, laid out the way the
GPU would run an unhindered graph: each node starts when the last node it depends on ends
(as soon as possible), and lasts

- with a profiled replay's kernel times (``run --full``): its kernel group's GPU time over
  the group's count, the other nodes that do work (copies, memsets, host callbacks) the
  median kernel's time, the rest (events, empty nodes) nothing;
- without: one equal share for each node that does work, nothing for the rest, so the
  schedule is the dependency order alone and says so (``timed`` is False).

The nodes are then packed into rows, the first row that is free when a node starts, as a
Gantt chart packs tasks: a graph of one serial chain is one row, a graph with a side
stream's branch two. The longest chain (by the estimated times) is marked: it is what a
replay cannot run faster than. Pure; nothing here imports torch.
"""

from __future__ import annotations

import statistics
from bisect import bisect_left, bisect_right
from collections import deque
from dataclasses import dataclass

from graphdoctor.trace import anatomy as shapes
from graphdoctor.trace.anatomy import Anatomy

# Node types that do work on the GPU (or hold it, a host callback); the rest order others.
WORKING = frozenset({shapes.KERNEL, shapes.MEMCPY, shapes.MEMSET, shapes.HOST,
                     shapes.CHILD_GRAPH, shapes.BATCH_MEM_OP, shapes.CONDITIONAL})
SLACK = 1e-9  # shares this close count as touching: a row is free when the last node ended


@dataclass(frozen=True)
class PlacedNode:
    """One node in the schedule: [start, end) as shares of the replay, its row, and
    whether it lies on the longest chain."""

    node: int
    start: float
    end: float
    row: int
    on_chain: bool


@dataclass(frozen=True)
class Row:
    """The nodes of one row, by start, with their starts apart for bisection."""

    nodes: tuple[PlacedNode, ...]
    starts: tuple[float, ...]

    def at(self, start: float, end: float) -> PlacedNode | None:
        """The node running at the middle of [start, end), else the first to start in it."""
        middle = (start + end) / 2
        index = bisect_right(self.starts, middle) - 1
        if index >= 0 and self.nodes[index].end > middle:
            return self.nodes[index]
        index = bisect_left(self.starts, start)
        if index < len(self.nodes) and self.starts[index] < end:
            return self.nodes[index]
        return None


@dataclass(frozen=True)
class NodeSchedule:
    """A graph's nodes laid out in rows; ``timed`` says whether node lengths come from a
    profiled replay's kernel times or are equal shares."""

    rows: tuple[Row, ...]
    timed: bool
    chain: int  # nodes on the longest chain

    @property
    def placed(self) -> int:
        return sum(len(row.nodes) for row in self.rows)


def schedule(found: Anatomy) -> NodeSchedule | None:
    """The estimated schedule of ``found``'s nodes; None when its nodes were not kept or none
    of them does work."""
    if not found.nodes_kept or not 0 < found.nodes <= shapes.MAX_STRUCTURE \
            or len(found.node_type) != found.nodes:
        return None  # a report is anyone's text: no more nodes than a recording keeps
    timed = found.profiled_replay_ns > 0
    lengths = node_lengths(found, timed)
    starts, ends = _as_soon_as_possible(found, lengths)
    makespan = max(ends, default=0.0)
    if makespan <= 0:
        return None
    chain = _longest_chain(found, ends)
    placed = [(n, starts[n] / makespan, ends[n] / makespan) for n in range(found.nodes)
              if lengths[n] > 0]
    return NodeSchedule(_packed(placed, chain), timed, len(chain))


def node_lengths(found: Anatomy, timed: bool) -> list[float]:
    """Each node's estimated length (ns where ``timed``, else shares of one)."""
    per_kernel = [g.gpu_ns / g.count if timed and g.gpu_ns >= 0 and g.count else 1.0
                  for g in found.kernels]
    typical = statistics.median(per_kernel) if per_kernel else 1.0
    lengths = []
    for node, kind in enumerate(found.node_type):
        name = shapes.NODE_TYPES[kind] if 0 <= kind < len(shapes.NODE_TYPES) else shapes.OTHER
        group = found.node_kernel[node] if node < len(found.node_kernel) else -1
        if name == shapes.KERNEL and 0 <= group < len(per_kernel):
            lengths.append(per_kernel[group])
        else:
            lengths.append(typical if name in WORKING else 0.0)
    return lengths


def _predecessors(found: Anatomy) -> list[list[int]]:
    before: list[list[int]] = [[] for _ in range(found.nodes)]
    for source, target in found.edge_list:
        if 0 <= source < found.nodes and 0 <= target < found.nodes:
            before[target].append(source)
    return before


def _topological(found: Anatomy, before: list[list[int]]) -> list[int]:
    """The nodes in an order where each comes after those it depends on (a cycle, which a
    CUDA graph cannot have, is broken by leaving its nodes in index order)."""
    waiting = [len(sources) for sources in before]
    after: list[list[int]] = [[] for _ in range(found.nodes)]
    for target, sources in enumerate(before):
        for source in sources:
            after[source].append(target)
    ready = deque(n for n in range(found.nodes) if waiting[n] == 0)
    order: list[int] = []
    while ready:
        node = ready.popleft()
        order.append(node)
        for target in after[node]:
            waiting[target] -= 1
            if waiting[target] == 0:
                ready.append(target)
    seen = set(order)
    return order + [n for n in range(found.nodes) if n not in seen]


def _as_soon_as_possible(found: Anatomy, lengths: list[float]) -> tuple[list[float],
                                                                         list[float]]:
    before = _predecessors(found)
    starts, ends = [0.0] * found.nodes, [0.0] * found.nodes
    for node in _topological(found, before):
        starts[node] = max((ends[p] for p in before[node]), default=0.0)
        ends[node] = starts[node] + lengths[node]
    return starts, ends


def _longest_chain(found: Anatomy, ends: list[float]) -> set[int]:
    """The nodes of the chain that ends last, followed back through the node each waited
    for."""
    before = _predecessors(found)
    node = max(range(found.nodes), key=lambda n: (ends[n], -n))
    chain = {node}
    while before[node] and len(chain) < found.nodes:  # a graph has no cycle; a report might
        node = max(before[node], key=lambda p: ends[p])
        chain.add(node)
    return chain


def _packed(placed: list[tuple[int, float, float]], chain: set[int]) -> tuple[Row, ...]:
    """Nodes in rows: each into the first row free when it starts, a new row if none is."""
    free_at: list[float] = []
    rows: list[list[PlacedNode]] = []
    for node, start, end in sorted(placed, key=lambda p: (p[1], p[0])):
        row = next((r for r, free in enumerate(free_at) if free <= start + SLACK), len(rows))
        if row == len(rows):
            free_at.append(end)
            rows.append([])
        free_at[row] = end
        rows[row].append(PlacedNode(node, start, end, row, node in chain))
    return tuple(Row(tuple(nodes), tuple(n.start for n in nodes)) for nodes in rows)
