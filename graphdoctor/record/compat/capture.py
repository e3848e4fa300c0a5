"""Captures: which of torch's APIs began one, the arguments of ``capture_begin``, the graph of a
``torch.cuda.graph`` block, a graph's memory pool, and the native graph class under the one
the recorder patches."""

from __future__ import annotations

from types import CodeType, FrameType
from typing import Any

from graphdoctor.record.compat.resolve import (
    Entry,
    TorchAttribute,
    TorchFile,
    TorchName,
    TorchParameters,
    TorchSource,
)
from graphdoctor.record.compat.versions import RUN_SEEN, STUB_GPU_RUN
from graphdoctor.trace.names import COMPILED, CUDA_GRAPH, GRAPH_CONTEXT, GRAPHED_CALLABLES

# The public APIs a capture can begin through, as the report names them.
RAW_API = CUDA_GRAPH
CONTEXT_API = GRAPH_CONTEXT
GRAPHED_CALLABLES_API = GRAPHED_CALLABLES
COMPILE_API = COMPILED

# torch's frames that say which API began a capture: the files that hold them, and names.
_GRAPHS_FILE = "graphs.py"  # torch/cuda/graphs.py: torch.cuda.graph, make_graphed_callables
_TREES_FILE = "cudagraph_trees.py"  # torch/_inductor/cudagraph_trees.py
_CONTEXT_ENTER = "__enter__"
_OWN_BOOKKEEPING = "__init__"  # the tree manager's own empty capture, in its __init__
CAPTURE_API = Entry("capture_api", RUN_SEEN, (
    TorchFile(f"cuda/{_GRAPHS_FILE}"), TorchFile(f"_inductor/{_TREES_FILE}"),
    TorchName("torch.cuda.graphs", f"graph.{_CONTEXT_ENTER}"),
    TorchName("torch.cuda.graphs", GRAPHED_CALLABLES_API),
    TorchSource(TorchName("torch._inductor.cudagraph_trees",
                          f"CUDAGraphTreeManager.{_OWN_BOOKKEEPING}"), ("torch.cuda.graph(",)),
))


def capture_api(frame: FrameType | None) -> tuple[str, bool]:
    """Which public API began the capture whose ``capture_begin`` ``frame`` called, and
    whether it is torch's own bookkeeping, from the frames above it."""
    api = RAW_API
    while frame is not None:
        found = api_of_frame(frame.f_code)
        if found is not None and found[0] != CONTEXT_API:
            return found
        if found is not None:
            api = CONTEXT_API  # unless an outer frame says more
        frame = frame.f_back
    return (api, False)


def api_of_frame(code: CodeType) -> tuple[str, bool] | None:
    """(API, torch's own bookkeeping) that a frame running ``code`` marks; None if none."""
    path, name = code.co_filename, code.co_name
    if path.endswith(_TREES_FILE):
        return (COMPILE_API, name == _OWN_BOOKKEEPING)
    if path.endswith(_GRAPHS_FILE) and "cuda" in path:
        if name == GRAPHED_CALLABLES_API:
            return (GRAPHED_CALLABLES_API, False)
        if name == _CONTEXT_ENTER:
            return (CONTEXT_API, False)
    return None


_POOL = "pool"
_ERROR_MODE = "capture_error_mode"
_DEFAULT_ERROR_MODE = "global"
CAPTURE_BEGIN_ARGUMENTS = Entry("capture_begin_arguments", RUN_SEEN, (
    TorchParameters(TorchName("torch.cuda.graphs", "CUDAGraph.capture_begin"),
                    (_POOL, _ERROR_MODE)),
))


def capture_begin_arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any]:
    """(pool, capture error mode) from the arguments ``CUDAGraph.capture_begin`` was given
    after the graph itself."""
    pool = kwargs.get(_POOL, args[0] if args else None)
    mode = kwargs.get(_ERROR_MODE, args[1] if len(args) > 1 else _DEFAULT_ERROR_MODE)
    return (pool, mode)


_CONTEXT_GRAPH = TorchAttribute(TorchName("torch.cuda.graphs", "graph"), "cuda_graph")
GRAPH_OF_CONTEXT = Entry("graph_of_context", RUN_SEEN, (_CONTEXT_GRAPH,))


def graph_of_context(context: object) -> Any:
    """The CUDAGraph a ``torch.cuda.graph`` block captures into; None where unknown."""
    return _CONTEXT_GRAPH.read(context)


_GRAPH_POOL = TorchAttribute(TorchName("torch.cuda.graphs", "CUDAGraph"), "pool")
GRAPH_POOL = Entry("graph_pool", RUN_SEEN, (_GRAPH_POOL,))


def graph_pool(graph: object) -> tuple[int, int] | None:
    """The id of the memory pool a captured graph allocated from."""
    pool = _GRAPH_POOL.read(graph)
    if pool is None:
        return None
    try:
        first, second = pool()
    except (RuntimeError, TypeError, ValueError):
        return None
    return (int(first), int(second))


_NATIVE_GRAPH = TorchName("torch._C", "_CUDAGraph", cuda_only=True)
UNPATCHED_GRAPH_CLASS = Entry("unpatched_graph_class", STUB_GPU_RUN, (
    _NATIVE_GRAPH,
    *(TorchName("torch._C", f"_CUDAGraph.{method}", cuda_only=True)
      for method in ("capture_begin", "capture_end", "reset")),
    # torch.cuda.CUDAGraph, whose methods graphdoctor patches, extends it and begins its
    # captures through it, by keyword
    TorchSource(TorchName("torch.cuda.graphs", "CUDAGraph.capture_begin"),
                ("super().capture_begin(", f"{_POOL}=", f"{_ERROR_MODE}=")),
))


def unpatched_graph_class() -> Any:
    """torch's native CUDA graph class, which ``torch.cuda.CUDAGraph`` extends: its methods are
    not the ones the recorder patches, so a capture graphdoctor makes or ends through them for
    itself is not recorded as the user's. Its ``capture_begin`` takes ``pool`` and
    ``capture_error_mode`` by keyword, with no defaults. None where this torch lacks it."""
    return _NATIVE_GRAPH.resolve()


ENTRIES = (CAPTURE_API, CAPTURE_BEGIN_ARGUMENTS, GRAPH_OF_CONTEXT, GRAPH_POOL,
           UNPATCHED_GRAPH_CLASS)
