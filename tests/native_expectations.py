"""What the native programs (fixtures/native/*.cu, recorded through CUPTI's injection
library) and the cuTile scenarios (fixtures/scripts/cutile_*.py) must show."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from graphdoctor.diagnose import diagnose, measure
from graphdoctor.diagnose.findings import Finding
from graphdoctor.diagnose.view import TraceView
from graphdoctor.trace import anatomy
from graphdoctor.trace.model import Trace
from graphdoctor.trace.names import CALLEES_BASIS, CAPTURE_FAILED, CAPTURED, is_native_api
from tests.expectations import expect, graphs, user_line

NATIVE = Path(__file__).resolve().parent.parent / "fixtures" / "native"
SCRIPTS = NATIVE.parent / "scripts"


def line_in(folder: Path, source: str, text: str, after: str = "") -> int:
    """The first line of ``source`` holding ``text`` (after the first holding ``after``)."""
    lines = (folder / source).read_text().splitlines()
    start = next(n for n, line in enumerate(lines) if after in line) if after else 0
    return next(n for n, line in enumerate(lines[start:], start + 1) if text in line)


def only(findings: list[Finding], rule: str) -> Finding:
    [found] = [f for f in findings if f.id == rule]
    return found


def at(finding: Finding, source: str, line: int) -> None:
    assert finding.location is not None
    assert (finding.location.file.rsplit("/", 1)[-1], finding.location.line) == (source, line)


# -- native programs ---------------------------------------------------------------------------
@expect("native_layer_stack")
def _layer_stack(trace: Trace, note: dict[str, Any]) -> None:
    """64 kernels captured from the C++ program's stream, named in the anatomy, replayed per
    token; the eager side is the same kernels launched eagerly, found by their order."""
    source = "native_layer_stack.cu"
    assert note["exit_code"] == 0 and note["self_timing"]["replay"]["median_us"] > 0
    [graph] = graphs(trace)
    assert graph.status == CAPTURED and is_native_api(graph.api)
    assert user_line(trace, graph.stack) == (source, line_in(NATIVE, source, "BeginCapture"))
    assert graph.anatomy is not None and graph.anatomy.kernel_count == 64
    assert {g.name for g in graph.anatomy.kernels} == {"matvec", "rms_norm", "residual_add"}
    assert graph.basis == CALLEES_BASIS and len(trace.tables["replays"]) == 200  # one a token
    verdict = measure.of_graph(TraceView(trace), graph)
    assert verdict.speedup is not None and verdict.speedup > 1.2  # launch gaps gone
    assert len(trace.tables["instantiations"]) == 1
    findings = diagnose(trace).findings
    at(only(findings, "GD203"), source,  # the replay loop's wait for each token
       line_in(NATIVE, source, "cudaStreamSynchronize(stream)", after="cudaGraphLaunch"))


@expect("native_explicit_graph")
def _explicit_graph(trace: Trace, note: dict[str, Any]) -> None:
    """A graph built node by node (cudaGraphAddKernelNode), recorded when instantiated at
    the line that built it; launched per token, measured against the same kernels eagerly."""
    source = "native_explicit_graph.cu"
    assert note["exit_code"] == 0 and note["self_timing"]["replay"]["host_us"] > 0
    [graph] = graphs(trace)
    assert graph.status == CAPTURED and graph.api == "graph built node by node (native)"
    assert user_line(trace, graph.stack) == (source, line_in(NATIVE, source, "cudaGraphCreate"))
    assert graph.anatomy is not None and graph.anatomy.kernel_count == 64
    assert graph.anatomy.longest_chain == 64  # each node after the one before
    assert len(trace.tables["replays"]) == 200 and graph.basis == CALLEES_BASIS
    verdict = measure.of_graph(TraceView(trace), graph)
    assert verdict.speedup is not None and verdict.speedup > 1.2


@expect("native_sync_in_capture")
def _sync_in_capture(trace: Trace, note: dict[str, Any]) -> None:
    source = "native_sync_in_capture.cu"
    assert note["exit_code"] == 1
    [graph] = graphs(trace)
    assert graph.status == CAPTURE_FAILED
    found = only(diagnose(trace).findings, "GD101")
    at(found, source, line_in(NATIVE, source, "cudaError_t waited = cudaStreamSynchronize"))
    assert found.title.startswith("cudaStreamSynchronize()") and "cudaStreamEndCapture" in found.fix


@expect("native_unjoined_fork")
def _unjoined_fork(trace: Trace, note: dict[str, Any]) -> None:
    source = "native_unjoined_fork.cu"
    assert note["exit_code"] == 1
    [graph] = graphs(trace)
    assert graph.status == CAPTURE_FAILED
    found = only(diagnose(trace).findings, "GD103")
    at(found, source, line_in(NATIVE, source, "cudaStreamWaitEvent(side, forked"))
    assert "cudaStreamWaitEvent(capture, joined" in found.fix and "torch" not in found.fix


@expect("native_memcpy_in_capture")
def _memcpy_in_capture(trace: Trace, note: dict[str, Any]) -> None:
    """A synchronous cudaMemcpy inside the capture ran once and is not a node: GD308 at its
    line, in CUDA's words; the program's own check found every later token stale."""
    source = "native_memcpy_in_capture.cu"
    assert note["exit_code"] == 0 and note["truth"].startswith("stale")
    assert note["self_timing"]["stale_tokens"] == note["self_timing"]["tokens"] - 1
    [graph] = graphs(trace)
    assert graph.status == CAPTURED and is_native_api(graph.api)
    assert graph.anatomy is not None and graph.anatomy.count_of(anatomy.MEMCPY) == 1  # the input
    found = only(diagnose(trace).findings, "GD308")
    at(found, source, line_in(NATIVE, source, "CHECK(cudaMemcpy(params.device"))
    assert found.title.startswith("cudaMemcpy() at ") and found.graph == graph.id
    assert "cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream)" in found.fix
    assert "torch" not in found.fix


@expect("native_memcpy_async_in_capture")
def _memcpy_async_in_capture(trace: Trace, note: dict[str, Any]) -> None:
    """The fix: the copy on the capture stream from pinned memory is a node of the graph,
    the program's check finds every token fresh, and nothing is left out."""
    assert note["exit_code"] == 0 and note["truth"].startswith("fresh")
    [graph] = graphs(trace)
    assert graph.status == CAPTURED
    assert graph.anatomy is not None and graph.anatomy.count_of(anatomy.MEMCPY) == 2
    assert not list(trace.tables["uncaptured_calls"])
    assert not [f for f in diagnose(trace).findings if f.id == "GD308"]


# -- cuTile (awaiting a GPU cuTile compiles for: tests/reports.py AWAITING_RECORDING) ------------
@expect("cutile_layer_stack")
def _cutile_layer_stack(trace: Trace, note: dict[str, Any]) -> None:
    assert note["exit_code"] == 0 and note["truth"] == "fresh"
    [graph] = graphs(trace)
    assert graph.status == CAPTURED
    assert graph.anatomy is not None and graph.anatomy.kernel_count >= 64
    verdict = measure.of_graph(TraceView(trace), graph)
    assert verdict.speedup is not None and verdict.speedup > 1


@expect("cutile_host_read_in_capture")
def _cutile_host_read(trace: Trace, note: dict[str, Any]) -> None:
    script = "cutile_host_read_in_capture.py"
    assert note["exit_code"] == 1
    at(only(diagnose(trace).findings, "GD101"), script,
       line_in(SCRIPTS, script, "return logits[0].item()"))


@expect("cutile_new_input_buffer")
def _cutile_new_input(trace: Trace, note: dict[str, Any]) -> None:
    script = "cutile_new_input_buffer.py"
    assert note["exit_code"] == 0 and note["truth"].startswith("stale")
    at(only(diagnose(trace).findings, "GD302"), script,
       line_in(SCRIPTS, script, "source = token(step)  # the culprit"))
