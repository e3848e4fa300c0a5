"""Graph anatomy: what a graph holds, read from the driver while its capture is still open.

``cuStreamGetCaptureInfo`` hands out the graph a stream is capturing into, and the driver
permits every operation on that graph but destroying it and removing nodes. Just before
``capture_end``, graphdoctor clones it (``cuGraphClone``: host memory only, never
instantiated); the user's graph is left as it would have been, kept or not. The clone is
read and destroyed from the flushing thread within half a second, so the capture pays for
the clone (0.2 ms for 114 nodes on an H100, once past the first read of the process),
counted as graphdoctor's own time, and not for the walk of the nodes (about 7 µs per node,
in Python). A small graph is
read at once, inside the capture, so that a crash soon after cannot take it along.

It needs NVIDIA's ``cuda-bindings`` (and ``cxxfilt`` to demangle kernel names), graphdoctor's
``anatomy`` extra; without them a note in the report says what is missing.
"""

from __future__ import annotations

import ctypes
import importlib
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from graphdoctor.record.recorder import Recorder
from graphdoctor.trace import anatomy
from graphdoctor.trace.event_kinds import NONE
from graphdoctor.trace.spool import records as sr

WHAT = "graph anatomy"
INLINE_NODES = 32  # nodes up to which a graph is read inside its capture (0.3-0.9 ms)
NEEDS = "needs cuda-bindings: pip install 'graphdoctor[anatomy]'"
UNMANGLED = "kernel names are left mangled: pip install cxxfilt"

# The driver's CUgraphNodeType names (less their CU_GRAPH_NODE_TYPE_ prefix), as graphdoctor's.
_NODE_TYPES = {
    "KERNEL": anatomy.KERNEL, "MEMCPY": anatomy.MEMCPY, "MEMSET": anatomy.MEMSET,
    "HOST": anatomy.HOST, "GRAPH": anatomy.CHILD_GRAPH, "EMPTY": anatomy.EMPTY,
    "WAIT_EVENT": anatomy.EVENT_WAIT, "EVENT_RECORD": anatomy.EVENT_RECORD,
    "EXT_SEMAS_SIGNAL": anatomy.SEMAPHORE_SIGNAL, "EXT_SEMAS_WAIT": anatomy.SEMAPHORE_WAIT,
    "MEM_ALLOC": anatomy.MEM_ALLOC, "MEM_FREE": anatomy.MEM_FREE,
    "BATCH_MEM_OP": anatomy.BATCH_MEM_OP, "CONDITIONAL": anatomy.CONDITIONAL,
}
_TYPE_INDEX = {name: i for i, name in enumerate(anatomy.NODE_TYPES)}


class DriverError(RuntimeError):
    """A driver call failed; the graph is left without an anatomy."""


# What a driver call, or a result this cuda-bindings shapes otherwise, can raise here.
_FAILURES = (DriverError, AttributeError, TypeError, ValueError, KeyError, IndexError)


class AnatomyReader:
    """Takes a copy of the graph a stream is capturing into (:meth:`take`, inside the
    capture), and reads and emits the copies later (:meth:`drain`, from the flushing
    thread's heartbeat), so the capture pays for one clone, not for a walk of its nodes."""

    def __init__(self, recorder: Recorder, driver: Any, demangle: Callable[[str], str]):
        self.rec = recorder
        self.driver = driver
        self.demangle = demangle
        self._names: dict[int, str] = {}  # function handle -> kernel group name
        self._copies: deque[tuple[int, Any, int]] = deque()  # (graph id, clone, ns taken)
        self._types: dict[Any, str] = {}

    def take(self, graph_id: int, stream: int) -> None:
        """Copy what the capture on ``stream`` holds so far, for ``graph_id``: read at once
        where it is small (so a crash right after cannot lose it), later otherwise. A capture
        no longer active (invalidated by an error) has no graph to copy."""
        started = time.perf_counter_ns()
        d = self.driver
        try:
            info = d.cuStreamGetCaptureInfo(d.CUstream(stream))
            active = d.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_ACTIVE
            if _failed(d, info[0]) or info[1] != active:
                return
        except _FAILURES as error:
            self.rec.note(WHAT, f"graph {graph_id} could not be copied: {error}")
            return
        self._copy(graph_id, info[3], started)

    def take_graph(self, graph_id: int, handle: int) -> None:
        """Copy a finished graph its owner keeps (one built node by node), by its handle."""
        self._copy(graph_id, self.driver.CUgraph(handle), time.perf_counter_ns())

    def _copy(self, graph_id: int, graph: Any, started: int) -> None:
        d = self.driver
        try:
            clone = _checked(d, d.cuGraphClone(graph))[1]
        except _FAILURES as error:
            self.rec.note(WHAT, f"graph {graph_id} could not be copied: {error}")
            return
        if _node_count(d, clone) <= INLINE_NODES:  # an unreadable count: read it here too
            self._settle(graph_id, clone, started, None)
        else:
            self._copies.append((graph_id, clone, time.perf_counter_ns() - started))

    def drain(self) -> None:
        """Read, emit and free every copy taken so far (a heartbeat: emits itself)."""
        while self._copies:
            graph_id, clone, taken_ns = self._copies.popleft()
            self._settle(graph_id, clone, 0, taken_ns)

    def _settle(self, graph_id: int, clone: Any, started: int, taken_ns: int | None) -> None:
        """Read, emit and free one copy: read inside its capture, where the read began at
        ``started``; read later, where taking the copy cost the capture ``taken_ns``."""
        try:
            found = self._read(clone)
        except _FAILURES as error:
            self.rec.note(WHAT, f"graph {graph_id} could not be read: {error}")
            return
        finally:
            self.driver.cuGraphDestroy(clone)
        found["read_ns"] = time.perf_counter_ns() - started if taken_ns is None else taken_ns
        self.rec.emit(sr.GraphAnatomy(graph_id, self.rec.now(), found))

    def _read(self, graph: Any) -> dict[str, Any]:
        nodes = self._nodes(graph)
        index = {int(node): i for i, node in enumerate(nodes)}
        edges = [(index[int(a)], index[int(b)]) for a, b in self._edges(graph)]
        return self._describe(nodes, edges)

    def _nodes(self, graph: Any) -> list[Any]:
        d = self.driver
        count = _checked(d, d.cuGraphGetNodes(graph))[-1]
        if not count:
            return []
        found = _checked(d, d.cuGraphGetNodes(graph, count))
        return list(found[1])[:found[-1]]

    def _edges(self, graph: Any) -> list[tuple[Any, Any]]:
        d = self.driver
        count = _checked(d, d.cuGraphGetEdges(graph))[-1]
        if not count:
            return []
        found = _checked(d, d.cuGraphGetEdges(graph, count))  # (err, from, to, [data,] count)
        return list(zip(found[1], found[2]))[:found[-1]]

    def _describe(self, nodes: list[Any], edges: list[tuple[int, int]]) -> dict[str, Any]:
        types = [self._type_of(node) for node in nodes]
        kernels = [self._kernel_name(n) for n, t in zip(nodes, types) if t == anatomy.KERNEL]
        hosts = [self._host_function(n) for n, t in zip(nodes, types) if t == anatomy.HOST]
        return described(types, kernels, hosts, edges)

    def _type_of(self, node: Any) -> str:
        node_type = _checked(self.driver, self.driver.cuGraphNodeGetType(node))[1]
        known = self._types.get(node_type)
        if known is None:
            name = str(getattr(node_type, "name", node_type)).removeprefix("CU_GRAPH_NODE_TYPE_")
            known = self._types[node_type] = _NODE_TYPES.get(name, anatomy.OTHER)
        return known

    def _kernel_name(self, node: Any) -> str:
        d = self.driver
        params = _checked(d, d.cuGraphKernelNodeGetParams(node))[1]
        handle = int(params.func) or int(params.kern)
        name = self._names.get(handle)
        if name is None:
            found = (d.cuFuncGetName(params.func) if int(params.func)
                     else d.cuKernelGetName(params.kern))
            raw = found[1] if not _failed(d, found[0]) else b""
            text = raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw)
            name = self._names[handle] = anatomy.group_name(self.demangle(text) or "?")
        return name

    def _host_function(self, node: Any) -> str:
        d = self.driver
        params = _checked(d, d.cuGraphHostNodeGetParams(node))[1]
        try:
            return symbol_at(int(params.fn))
        except (TypeError, ValueError):  # a handle this cuda-bindings does not convert
            return "a host function"


def described(types: list[str], kernels: list[str], hosts: list[str],
              edges: list[tuple[int, int]]) -> dict[str, Any]:
    """A graph's anatomy in its JSON form: node ``types`` (graphdoctor's names), the kernel
    nodes' group names in node order, the host nodes' functions, and the edges."""
    groups, kernel_group = anatomy.grouped(kernels)
    longest, widest = anatomy.shape_of(len(types), edges)
    counts: dict[str, int] = {}
    for node_type in types:
        counts[node_type] = counts.get(node_type, 0) + 1
    found: dict[str, Any] = {
        "nodes": len(types), "edges": len(edges), "node_types": counts,
        "kernels": [[g.name, g.count] for g in groups],
        "longest_chain": longest, "widest_level": widest, "host_functions": hosts,
    }
    if len(types) <= anatomy.MAX_STRUCTURE:
        found.update(_structure(types, kernel_group, edges))
    return found


def node_type_named(name: str) -> str:
    """graphdoctor's name for the driver's CUgraphNodeType name (less CU_GRAPH_NODE_TYPE_)."""
    return _NODE_TYPES.get(name, anatomy.OTHER)


def _structure(types: list[str], kernel_group: list[int],
               edges: list[tuple[int, int]]) -> dict[str, Any]:
    """Each node's type and kernel group, and each edge: what the DOT export draws."""
    groups = iter(kernel_group)
    return {"nodes_kept": True, "node_type": [_TYPE_INDEX[t] for t in types],
            "node_kernel": [next(groups) if t == anatomy.KERNEL else NONE
                            for t in types],
            "edge_list": [list(e) for e in edges]}


def _node_count(driver: Any, graph: Any) -> int:
    """How many nodes ``graph`` has; 0 where the driver does not say."""
    try:
        return int(_checked(driver, driver.cuGraphGetNodes(graph))[-1])
    except _FAILURES:
        return 0


def _failed(driver: Any, result: Any) -> bool:
    return bool(result != driver.CUresult.CUDA_SUCCESS)


def _checked(driver: Any, result: tuple[Any, ...]) -> tuple[Any, ...]:
    if _failed(driver, result[0]):
        raise DriverError(str(getattr(result[0], "name", result[0])))
    return result


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


def symbol_at(address: int) -> str:
    """The symbol (and library) at a function address, as the dynamic linker knows it; the
    bare address where it knows none (a ctypes callback, a stripped library)."""
    info = _DlInfo()
    try:
        found = ctypes.CDLL(None).dladdr(ctypes.c_void_p(address), ctypes.byref(info))
    except (AttributeError, OSError):
        found = 0
    if not found or not info.dli_sname:
        return f"a function at {address:#x}"
    library = (info.dli_fname or b"").decode(errors="replace").rsplit("/", 1)[-1]
    return f"{info.dli_sname.decode(errors='replace')} ({library})"


def new_reader(recorder: Recorder) -> AnatomyReader | None:
    """A reader, or None (with a note saying why) where cuda-bindings is not installed."""
    try:
        driver = importlib.import_module("cuda.bindings.driver")
    except ImportError:
        recorder.note(WHAT, NEEDS)
        return None
    return AnatomyReader(recorder, driver, demangler(recorder))


def demangler(recorder: Recorder) -> Callable[[str], str]:
    try:
        cxxfilt = importlib.import_module("cxxfilt")
    except ImportError:
        recorder.note(WHAT, UNMANGLED)
        return lambda name: name

    def demangle(name: str) -> str:
        try:
            return str(cxxfilt.demangle(name))
        except Exception:  # noqa: BLE001  (cxxfilt raises its own errors for names C++ did not mangle)
            return name

    return demangle
