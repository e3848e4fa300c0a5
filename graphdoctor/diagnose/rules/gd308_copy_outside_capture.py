"""A native program copied or set memory during a capture in a way the capture cannot record:
the copy ran once, then, and is not in the graph.

Only work issued to the capturing stream (or to streams forked from it) becomes a node. A
synchronous ``cudaMemcpy`` or ``cudaMemset`` goes to the legacy default stream and makes
the host wait; an asynchronous one given the default stream goes there too. While a
non-blocking stream captures, CUDA runs such a call at once and the capture carries on
without it: nothing fails, but every replay runs without the copy. Parameters refreshed
that way keep their capture-time values for every replay; an input copied that way is the
first one forever.

How to fix: issue the copy on the capture stream, asynchronously, from pinned host memory
(``cudaMallocHost``, or ``cudaHostRegister`` on the buffer), between
``cudaStreamBeginCapture`` and ``cudaStreamEndCapture``: ``cudaMemcpyAsync(dst, src, bytes,
cudaMemcpyHostToDevice, stream)``, which becomes a memcpy node that reads the pinned buffer
at every launch; refresh that buffer before each ``cudaGraphLaunch``. Or make the copy
before each launch, outside the capture.
"""

from __future__ import annotations

from collections.abc import Iterator

from graphdoctor.diagnose.findings import ERROR, UNSAFE, Finding, Rule
from graphdoctor.diagnose.view import TraceView
from graphdoctor.trace.event_kinds import UncapturedCall
from graphdoctor.trace.model import Graph
from graphdoctor.trace.names import CAPTURED
from graphdoctor.units import counted

ID, NAME = "GD308", "copy-outside-capture"
KIND = "uncaptured_calls"


def check(view: TraceView) -> Iterator[Finding]:
    for graph in view.graphs:
        calls = [(i, c) for i, c in view.rows(KIND) if c.graph == graph.id]
        if calls and graph.status == CAPTURED:
            yield _finding(view, graph, calls)


def _finding(view: TraceView, graph: Graph, calls: list[tuple[int, UncapturedCall]]) -> Finding:
    by_line: dict[str, list[UncapturedCall]] = {}
    for _, call in calls:
        by_line.setdefault(view.where(call.stack), []).append(call)
    first = calls[0][1]
    runtime = runtime_call(first.call)
    others = f" (and {counted(len(by_line) - 1, 'other line')})" if len(by_line) > 1 else ""
    return RULE.finding(
        title=f"{runtime} at {view.where(first.stack)} ran once during the capture of graph "
              f"{graph.id} and is not in it{others}",
        explanation=(f"While graph {graph.id} was being captured (from "
                     f"{view.where(graph.stack)}), the program called {runtime} "
                     f"({first.call}, {_how(first)}): CUDA ran it then and there, once, "
                     f"instead of adding it to the graph, since only work issued to the "
                     f"capturing stream is captured. Every replay runs without it: what it "
                     f"was to bring in each time (new parameters, a new input) reaches the "
                     f"graph only as it was during the capture. Calls left out: "
                     + "; ".join(f"{line} ({_calls(each)})" for line, each in by_line.items())
                     + "."),
        fix=_fix(runtime),
        evidence=tuple(view.evidence(KIND, i, c.call) for i, c in calls[:50]),
        location=view.location(first.stack), graph=graph.id,
        measurements={"calls": len(calls), "lines": len(by_line), "call": first.call})


def runtime_call(driver: str) -> str:
    """How a program writes the call CUDA's driver names: ``cuMemcpyHtoD_v2`` is
    ``cudaMemcpy()``, ``cuMemsetD32Async`` on the default stream ``cudaMemsetAsync()``."""
    base = driver.split("_")[0]
    kind = "Memset" if base.startswith("cuMemset") else "Memcpy"
    shape = "2D" if "2D" in base else "3D" if "3D" in base else ""
    peer = "Peer" if "Peer" in base else ""
    asynchronous = "Async" if "Async" in base else ""
    return f"cuda{kind}{shape}{peer}{asynchronous}()"


def _how(call: UncapturedCall) -> str:
    if "Async" in call.call:
        return "asynchronous, on the default stream"
    return "synchronous, on the legacy default stream, the host waiting for it"


def _calls(calls: list[UncapturedCall]) -> str:
    names = sorted({runtime_call(c.call) for c in calls})
    return f"{counted(len(calls), 'call')} of {', '.join(names)}"


def _fix(runtime: str) -> str:
    if runtime.startswith("cudaMemset"):
        return ("Set the memory on the capture stream inside the capture: "
                "cudaMemsetAsync(ptr, value, bytes, stream) between cudaStreamBeginCapture "
                "and cudaStreamEndCapture becomes a memset node run at every launch; or set "
                "it before each cudaGraphLaunch, outside the capture.")
    return ("Copy on the capture stream, asynchronously, from pinned host memory: allocate "
            "the host buffer with cudaMallocHost (or cudaHostRegister it) and call "
            "cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream) between "
            "cudaStreamBeginCapture and cudaStreamEndCapture, so it becomes a memcpy node "
            "that reads the pinned buffer at every launch; refresh that buffer before each "
            "cudaGraphLaunch (once the previous launch is done). Or copy before each "
            "cudaGraphLaunch, outside the capture.")


RULE = Rule(ID, NAME, check, __doc__ or "", severity=ERROR, category=UNSAFE)
