"""The anatomy reader against a stand-in for cuda-bindings' driver module.

The stand-in answers the calls the reader makes as cuda-bindings 13 does (a result tuple,
the CUresult first and the count last); what a real driver returns is checked on a GPU, by
the fixtures' expectations (tests/expectations.py) over recordings made there.
"""

from __future__ import annotations

import ctypes
import enum
from types import SimpleNamespace
from typing import Any

from graphdoctor.record.capture import anatomy_reader as reader_module
from graphdoctor.record.capture.anatomy_reader import INLINE_NODES, AnatomyReader, symbol_at
from graphdoctor.trace import anatomy
from graphdoctor.trace.spool import records as sr


class CUresult(enum.IntEnum):
    CUDA_SUCCESS = 0
    CUDA_ERROR_INVALID_VALUE = 1


class CUstreamCaptureStatus(enum.IntEnum):
    CU_STREAM_CAPTURE_STATUS_NONE = 0
    CU_STREAM_CAPTURE_STATUS_ACTIVE = 1
    CU_STREAM_CAPTURE_STATUS_INVALIDATED = 2


class CUgraphNodeType(enum.IntEnum):
    CU_GRAPH_NODE_TYPE_KERNEL = 0
    CU_GRAPH_NODE_TYPE_MEMCPY = 1
    CU_GRAPH_NODE_TYPE_MEMSET = 2
    CU_GRAPH_NODE_TYPE_HOST = 3


OK = CUresult.CUDA_SUCCESS
MANGLED_TANH = "_ZN2at6native6tanh_kEv"


class Node(int):
    """A node handle: cuda-bindings' converts to int too."""


class FakeDriver:
    CUresult, CUstreamCaptureStatus, CUgraphNodeType = CUresult, CUstreamCaptureStatus, \
        CUgraphNodeType

    def __init__(self, types: list[CUgraphNodeType], edges: list[tuple[int, int]],
                 names: dict[int, str], status: CUstreamCaptureStatus =
                 CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_ACTIVE):
        self.types, self.edges, self.names, self.status = types, edges, names, status
        self.clones: list[str] = []
        self.destroyed: list[str] = []
        self.fail: set[str] = set()

    def CUstream(self, handle: int) -> int:  # noqa: N802 - the driver's name
        return handle

    def cuStreamGetCaptureInfo(self, stream: int) -> tuple[Any, ...]:  # noqa: N802
        return (OK, self.status, 7, "captured graph", [], None, 0)

    def cuGraphClone(self, graph: str) -> tuple[Any, ...]:  # noqa: N802
        if "clone" in self.fail:
            return (CUresult.CUDA_ERROR_INVALID_VALUE, None)
        self.clones.append(f"copy {len(self.clones)}")
        return (OK, self.clones[-1])

    def cuGraphDestroy(self, graph: str) -> tuple[Any, ...]:  # noqa: N802
        self.destroyed.append(graph)
        return (OK,)

    def cuGraphGetNodes(self, graph: str, count: int = 0) -> tuple[Any, ...]:  # noqa: N802
        nodes = [Node(100 + i) for i in range(len(self.types))][:count] if count else None
        return (OK, nodes, len(self.types))

    def cuGraphGetEdges(self, graph: str, count: int = 0) -> tuple[Any, ...]:  # noqa: N802
        if not count:
            return (OK, None, None, None, len(self.edges))
        return (OK, [Node(100 + a) for a, _ in self.edges], [Node(100 + b) for _, b in self.edges],
                None, len(self.edges))

    def cuGraphNodeGetType(self, node: Node) -> tuple[Any, ...]:  # noqa: N802
        if "type" in self.fail:
            return (CUresult.CUDA_ERROR_INVALID_VALUE, None)
        return (OK, self.types[node - 100])

    def cuGraphKernelNodeGetParams(self, node: Node) -> tuple[Any, ...]:  # noqa: N802
        return (OK, SimpleNamespace(func=node, kern=0))

    def cuFuncGetName(self, func: int) -> tuple[Any, ...]:  # noqa: N802
        return (OK, self.names[func - 100].encode())

    def cuGraphHostNodeGetParams(self, node: Node) -> tuple[Any, ...]:  # noqa: N802
        return (OK, SimpleNamespace(fn=ctypes.cast(ctypes.CDLL(None).qsort, ctypes.c_void_p)
                                    .value))


class FakeRecorder:
    def __init__(self) -> None:
        self.records: list[Any] = []
        self.notes: list[tuple[str, str]] = []

    def emit(self, record: Any) -> None:
        self.records.append(record)

    def note(self, what: str, why: str) -> None:
        self.notes.append((what, why))

    def now(self) -> int:
        return 42


K, H, S = (CUgraphNodeType.CU_GRAPH_NODE_TYPE_KERNEL, CUgraphNodeType.CU_GRAPH_NODE_TYPE_HOST,
           CUgraphNodeType.CU_GRAPH_NODE_TYPE_MEMSET)


def reader_of(driver: FakeDriver) -> tuple[AnatomyReader, FakeRecorder]:
    recorder = FakeRecorder()
    return AnatomyReader(recorder, driver, lambda name: name.replace(MANGLED_TANH, "tanh_k()")), \
        recorder  # type: ignore[arg-type]


def test_a_small_graph_is_read_inside_its_capture_and_its_copy_freed() -> None:
    # memset -> matmul -> host -> tanh, and a second matmul beside the first
    driver = FakeDriver([S, K, H, K, K], [(0, 1), (1, 2), (2, 3), (0, 4)],
                        {1: "gemm", 3: MANGLED_TANH, 4: "gemm"})
    reader, recorder = reader_of(driver)
    reader.take(3, stream=0)
    [record] = recorder.records
    assert isinstance(record, sr.GraphAnatomy) and record.graph == 3
    found = anatomy.from_plain(record.info)
    assert found is not None
    assert found.node_types == {"memset": 1, "kernel": 3, "host": 1}
    assert [(g.name, g.count) for g in found.kernels] == [("gemm", 2), ("tanh_k", 1)]
    assert (found.longest_chain, found.widest_level) == (4, 2)
    assert found.host_functions[0].startswith("qsort (libc")
    assert found.nodes_kept and found.node_kernel == (-1, 0, -1, 1, 0)
    assert driver.destroyed == driver.clones == ["copy 0"] and found.read_ns > 0


def test_a_large_graph_is_copied_in_its_capture_and_read_at_the_next_heartbeat() -> None:
    count = INLINE_NODES + 1
    driver = FakeDriver([K] * count, [(i, i + 1) for i in range(count - 1)],
                        dict.fromkeys(range(count), "k"))
    reader, recorder = reader_of(driver)
    reader.take(0, stream=0)
    assert not recorder.records and not driver.destroyed
    reader.drain()
    [record] = recorder.records
    assert record.info["longest_chain"] == count and driver.destroyed == ["copy 0"]
    reader.drain()
    assert len(recorder.records) == 1


def test_an_invalidated_capture_has_no_anatomy_and_no_note() -> None:
    driver = FakeDriver([K], [], {0: "k"},
                        status=CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_INVALIDATED)
    reader, recorder = reader_of(driver)
    reader.take(0, stream=0)
    assert not recorder.records and not recorder.notes and not driver.clones


def test_a_driver_call_that_fails_leaves_a_note_and_frees_the_copy() -> None:
    driver = FakeDriver([K], [], {0: "k"})
    driver.fail.add("type")
    reader, recorder = reader_of(driver)
    reader.take(5, stream=0)
    assert not recorder.records and driver.destroyed == ["copy 0"]
    assert recorder.notes == [(reader_module.WHAT, "graph 5 could not be read: "
                                                   "CUDA_ERROR_INVALID_VALUE")]
    driver.fail = {"clone"}
    reader.take(6, stream=0)
    assert recorder.notes[-1][1] == "graph 6 could not be copied: CUDA_ERROR_INVALID_VALUE"


def test_a_function_with_no_symbol_is_named_by_its_address() -> None:
    callback = ctypes.CFUNCTYPE(None)(lambda: None)
    address = ctypes.cast(callback, ctypes.c_void_p).value
    assert address is not None
    assert symbol_at(address) == f"a function at {address:#x}"
    assert symbol_at(ctypes.cast(ctypes.CDLL(None).qsort, ctypes.c_void_p).value or 0) \
        .startswith("qsort (libc")
