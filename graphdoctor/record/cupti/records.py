"""The records of a graph made outside PyTorch, as both CUPTI recorders write them: the
``--cupti`` layer in a Python process (:mod:`graphdoctor.record.cupti.graphs`) and the
native programs' translator (:mod:`graphdoctor.record.native.translate`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from graphdoctor.record.cupti.calls import CAPTURE_ERRORS
from graphdoctor.trace.spool import records as sr


@dataclass
class OutsideGraph:
    """A graph made outside PyTorch, while it is being made."""

    id: int
    stream: int
    start: int
    stack: int
    api: str


def graph_begin(graph: OutsideGraph, mode: str) -> sr.GraphBegin:
    return sr.GraphBegin({
        "id": graph.id, "t": graph.start, "api": graph.api, "internal": False,
        "stream": graph.stream, "shared_pool": False, "pool": "",
        "capture_error_mode": mode, "stack": graph.stack, "function": -1, "key": "",
        "device": 0})


def graph_end(graph: int, t: int, status: str, error: int, callees: Sequence[int] = (),
              basis: str = "") -> sr.GraphEnd:
    return sr.GraphEnd({"id": graph, "t": t, "status": status, "pool": "", "pool_bytes": 0,
                        "error": error, "callees": list(callees), "basis": basis, "own": []})


def capture_error(exc_id: int, t: int, where: str, graph: int, thread: int, code: int,
                  stack: int) -> sr.ExceptionInfo:
    """A CUDA error the driver returned (by its number), at the line that made the call."""
    name, message = CAPTURE_ERRORS.get(code, (f"CUresult {code}", f"CUDA error {code}"))
    return sr.ExceptionInfo({"id": exc_id, "t": t, "where": where, "graph": graph,
                             "thread": thread, "chain": [["CUresult", message, name, stack]]})
