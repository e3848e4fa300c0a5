"""What a captured graph holds: its nodes by type, its kernels grouped by name, and its shape.

The recorder reads a graph's nodes from the driver while its capture is still open (the graph
under construction is readable then, and the user's graph is neither kept nor copied), and
writes what is below. The shape says how serial the graph is: the longest dependency chain
counts the nodes one after another that no replay can overlap; the widest level counts the
nodes that can run side by side. A graph of 400 nodes with a chain of 400 is one serial
chain; the CUDA programming guide's advice is that such a chain of short kernels gains most
from a graph, and a few long kernels gain nothing.

Nothing here imports torch: the recorder and every reader use it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from graphdoctor.trace.event_kinds import NONE

# The node types of a CUDA graph, as graphdoctor names them (the driver's CUgraphNodeType).
KERNEL = "kernel"
MEMCPY = "memcpy"
MEMSET = "memset"
HOST = "host"
CHILD_GRAPH = "child graph"
EMPTY = "empty"
EVENT_WAIT = "event wait"
EVENT_RECORD = "event record"
SEMAPHORE_SIGNAL = "semaphore signal"
SEMAPHORE_WAIT = "semaphore wait"
MEM_ALLOC = "memory alloc"
MEM_FREE = "memory free"
BATCH_MEM_OP = "batch memory op"
CONDITIONAL = "conditional"
OTHER = "other"
NODE_TYPES = (KERNEL, MEMCPY, MEMSET, HOST, CHILD_GRAPH, EMPTY, EVENT_WAIT, EVENT_RECORD,
              SEMAPHORE_SIGNAL, SEMAPHORE_WAIT, MEM_ALLOC, MEM_FREE, BATCH_MEM_OP,
              CONDITIONAL, OTHER)

MAX_GROUPS = 48  # kernel groups kept per graph, the largest first; the rest count as one
MAX_STRUCTURE = 4096  # nodes up to which each node and edge is kept (for the DOT export)
MAX_NAME = 400  # characters of a kernel group's name
OTHER_KERNELS = "(other kernels)"
NCCL_KERNEL = "nccl"  # how NCCL's kernels' names begin (ncclDevKernel_AllReduce_Sum_f32_...)


@dataclass(frozen=True)
class KernelGroup:
    """Kernels of one name (demangled, without its parameter list) in one graph; ``gpu_ns``
    their GPU time in one profiled replay (NONE where no replay was profiled)."""

    name: str
    count: int
    gpu_ns: int = NONE


@dataclass(frozen=True)
class Anatomy:
    """One captured graph's content. ``node_types`` counts nodes by type (NODE_TYPES);
    ``longest_chain`` and ``widest_level`` are counted in nodes; ``host_functions`` names
    the CPU callbacks of host nodes where the process's symbols do. ``nodes_kept`` says
    whether ``node_type``, ``node_kernel`` (a group index, or NONE) and ``edges`` list every
    node and dependency; ``read_ns`` is what reading it cost, inside the capture."""

    nodes: int
    edges: int
    node_types: dict[str, int]
    kernels: tuple[KernelGroup, ...] = ()
    longest_chain: int = 0
    widest_level: int = 0
    host_functions: tuple[str, ...] = ()
    nodes_kept: bool = False
    node_type: tuple[int, ...] = ()  # per node: its index in NODE_TYPES
    node_kernel: tuple[int, ...] = ()  # per node: its kernel group, or NONE
    edge_list: tuple[tuple[int, int], ...] = ()  # (from, to) node indices
    read_ns: int = 0
    profiled_replay_ns: int = NONE  # GPU time of the profiled replay's kernels, where timed

    @property
    def kernel_count(self) -> int:
        return self.node_types.get(KERNEL, 0)

    @property
    def serial_share(self) -> float:
        """The longest chain's share of the nodes: 1.0 for one serial chain."""
        return self.longest_chain / self.nodes if self.nodes else 0.0

    def type_of(self, node: int) -> str:
        """Node ``node``'s type (a name of NODE_TYPES; OTHER for one no reader knows)."""
        kind = self.node_type[node] if 0 <= node < len(self.node_type) else NONE
        return NODE_TYPES[kind] if 0 <= kind < len(NODE_TYPES) else OTHER

    def kernel_of(self, node: int) -> str:
        """Node ``node``'s kernel group name ("" for a node that is not a kernel)."""
        group = self.node_kernel[node] if 0 <= node < len(self.node_kernel) else NONE
        return self.kernels[group].name if 0 <= group < len(self.kernels) else ""

    def count_of(self, node_type: str) -> int:
        return self.node_types.get(node_type, 0)

    @property
    def nccl_kernels(self) -> int:
        """The NCCL kernels it holds: one per captured collective (``ncclDevKernel_...``)."""
        return sum(g.count for g in self.kernels if g.name.startswith(NCCL_KERNEL))


def shape_of(nodes: int, edges: Iterable[tuple[int, int]]) -> tuple[int, int]:
    """(longest dependency chain, widest level) of a graph of ``nodes`` nodes, in nodes. A
    node's level is the length of the longest chain that ends at it."""
    successors: list[list[int]] = [[] for _ in range(nodes)]
    waiting = [0] * nodes
    for source, target in edges:
        successors[source].append(target)
        waiting[target] += 1
    level = [1] * nodes
    ready = [n for n in range(nodes) if waiting[n] == 0]
    while ready:
        node = ready.pop()
        for after in successors[node]:
            level[after] = max(level[after], level[node] + 1)
            waiting[after] -= 1
            if waiting[after] == 0:
                ready.append(after)
    widths: dict[int, int] = {}
    for value in level:
        widths[value] = widths.get(value, 0) + 1
    return (max(level, default=0), max(widths.values(), default=0))


def group_name(demangled: str) -> str:
    """A kernel's group: its demangled name without ``void`` and without its parameter list,
    so the launches of one kernel template instance read as one."""
    name = demangled.removeprefix("void ").strip()
    cut = _parameters_at(name)
    return (name[:cut] if cut > 0 else name)[:MAX_NAME]


def _parameters_at(name: str) -> int:
    """Where the top-level parameter list of a demangled function name begins (-1: none)."""
    angle = paren = 0
    for index, char in enumerate(name):
        if char == "<":
            angle += 1
        elif char == ">":
            angle = max(0, angle - 1)
        elif char == "(":
            # "operator()" and "(anonymous namespace)::" are parts of the name, not its list
            if angle == paren == 0 and not name[:index].endswith(("operator", "::")):
                return index
            paren += 1
        elif char == ")":
            paren = max(0, paren - 1)
    return -1


_HINT = re.compile(
    r"\b(\w+_kernel_cuda|\w+_kernel_impl|launch_\w+|\w*Functor\w*|\w+_functor|cutlass_\w+)\b")
# template arguments that name the kind of kernel, not the operation
_GENERIC = frozenset({"BinaryFunctor", "AUnaryFunctor", "BUnaryFunctor", "UnaryFunctor"})


def short_kernel_name(name: str) -> str:
    """A kernel group's name for a table cell: the function's own name, and the operation
    its template arguments name where one does
    (``vectorized_elementwise_kernel<tanh_kernel_cuda>``)."""
    top = name.split("<", 1)
    base = top[0].rsplit("::", 1)[-1]
    hints = _HINT.findall(top[1]) if len(top) > 1 else []
    hint = next((h for h in hints if h not in _GENERIC), hints[0] if hints else "")
    return f"{base}<{hint}>" if hint else base


def grouped(names: Sequence[str]) -> tuple[tuple[KernelGroup, ...], list[int]]:
    """Kernel groups, the largest first (at most MAX_GROUPS, the rest as one), and each
    name's group index."""
    counts: dict[str, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    ranked = sorted(counts, key=lambda n: (-counts[n], n))
    kept, rest = ranked[:MAX_GROUPS - 1], ranked[MAX_GROUPS - 1:]
    if len(rest) == 1:
        kept, rest = ranked, []
    groups = [KernelGroup(n, counts[n]) for n in kept]
    if rest:
        groups.append(KernelGroup(OTHER_KERNELS, sum(counts[n] for n in rest)))
    index = {n: i for i, n in enumerate(kept)}
    return tuple(groups), [index.get(n, len(kept)) for n in names]


def from_plain(data: Mapping[str, Any] | None) -> Anatomy | None:
    """An anatomy from its JSON form (a report's, or a spool record's); None for none."""
    if not isinstance(data, Mapping) or "nodes" not in data:
        return None
    return Anatomy(
        nodes=int(data["nodes"]), edges=int(data.get("edges", 0)),
        node_types={str(k): int(v) for k, v in dict(data.get("node_types") or {}).items()},
        kernels=tuple(_kernel_group(g) for g in data.get("kernels") or ()),
        longest_chain=int(data.get("longest_chain", 0)),
        widest_level=int(data.get("widest_level", 0)),
        host_functions=tuple(str(h) for h in data.get("host_functions") or ()),
        nodes_kept=bool(data.get("nodes_kept")),
        node_type=tuple(int(t) for t in data.get("node_type") or ()),
        node_kernel=tuple(int(k) for k in data.get("node_kernel") or ()),
        edge_list=tuple((int(e[0]), int(e[1])) for e in data.get("edge_list") or ()),
        read_ns=int(data.get("read_ns", 0)),
        profiled_replay_ns=int(data.get("profiled_replay_ns", NONE)),
    )


def _kernel_group(data: Any) -> KernelGroup:
    if isinstance(data, Mapping):
        return KernelGroup(str(data.get("name", "")), int(data.get("count", 0)),
                           int(data.get("gpu_ns", NONE)))
    return KernelGroup(str(data[0]), int(data[1]))


def with_kernel_times(found: Anatomy, times: Mapping[str, int], total: int) -> Anatomy:
    """``found`` with each kernel group's GPU time in one profiled replay (``times``, by
    group name; a kernel the graph's groups do not name counts toward the other kernels)."""
    named = {g.name for g in found.kernels}
    unmatched = sum(int(ns) for name, ns in times.items() if name not in named)
    groups = tuple(replace(g, gpu_ns=int(times.get(g.name, 0)) + (
        unmatched if g.name == OTHER_KERNELS else 0)) for g in found.kernels)
    return replace(found, kernels=groups, profiled_replay_ns=int(total))


def summary(found: Anatomy) -> str:
    """One line: the nodes by type and the shape (``400 nodes: 400 kernels · chain 400 of
    400, width 1``)."""
    if not found.nodes:
        return "0 nodes (an empty graph)"
    kinds = ", ".join(_counted(found.node_types[t], t) for t in NODE_TYPES if t in found.node_types)
    return (f"{found.nodes} nodes: {kinds} · chain {found.longest_chain} of {found.nodes}, "
            f"width {found.widest_level}")


def top_kernels(found: Anatomy, count: int = 3) -> list[str]:
    """The largest kernel groups, by GPU time where a replay was profiled, else by count:
    ``200× vectorized_elementwise_kernel<tanh_kernel_cuda>`` (``, 5.6 ms, 94%``)."""
    timed = found.profiled_replay_ns > 0
    ranked = sorted(found.kernels, key=lambda g: -g.gpu_ns) if timed else list(found.kernels)
    return [_kernel_line(g, found.profiled_replay_ns if timed else 0) for g in ranked[:count]]


def _kernel_line(group: KernelGroup, total_ns: int) -> str:
    line = f"{group.count}× {short_kernel_name(group.name)}"
    if total_ns > 0 and group.gpu_ns >= 0:
        line += f" ({group.gpu_ns / 1e3:,.1f} µs, {group.gpu_ns / total_ns:.0%} of the replay)"
    return line


def _counted(count: int, node_type: str) -> str:
    return f"{count} {node_type}{'' if count == 1 else 's'}"


def sentence(found: Anatomy | None) -> str:
    """What a graph holds, as a sentence for a finding's explanation ("" where unknown)."""
    if found is None:
        return ""
    kernels = "; ".join(top_kernels(found))
    largest = f"; its largest kernel groups: {kernels}" if kernels else ""
    return f" The graph holds {summary(found)}{largest}."
