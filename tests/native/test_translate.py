"""The library's lines, as an H200 wrote them for the fixture programs, become the records
the diagnosis reads; a line that is not an event is noted, never fatal."""

from __future__ import annotations

import json
from pathlib import Path

from graphdoctor.diagnose import diagnose, measure
from graphdoctor.diagnose.view import TraceView
from graphdoctor.trace.names import CALLEES_BASIS, CAPTURE_FAILED, CAPTURED, CUPTI_PART
from tests.native.helpers import recorded_lines, translated


def test_a_captured_layer_stack_its_launches_and_its_eager_steps(tmp_path: Path) -> None:
    trace, events = translated(recorded_lines("native_layer_stack"), tmp_path)
    [graph] = trace.graphs
    assert graph.status == CAPTURED and graph.api == "stream capture (native)"
    assert graph.anatomy is not None and graph.anatomy.kernel_count == 64
    assert graph.anatomy.nodes == 65  # and the copy of the token into the fixed buffer
    replays = trace.tables["replays"]
    assert len(replays) == 200 and set(replays.data["graph"]) == {graph.id}  # one a token
    # the same 64 kernels launched eagerly, 200 tokens: the graph's eager calls
    eager = [c for c in trace.tables["calls"] if c.mode == "eager"]
    assert len(eager) == 200 and graph.callees == (eager[0].fn,) and graph.basis == CALLEES_BASIS
    measured = measure.of_graph(TraceView(trace), graph)
    assert measured.speedup is not None and measured.speedup > 1
    assert len(trace.tables["syncs"]) == 400 and len(events.kernels) == 12_800


def test_a_sync_inside_the_capture_fails_it_at_the_users_line(tmp_path: Path) -> None:
    trace, _ = translated(recorded_lines("native_sync_in_capture"), tmp_path)
    [graph] = trace.graphs
    assert graph.status == CAPTURE_FAILED
    first = trace.exceptions[0].chain[0]
    assert first.cuda_error == "cudaErrorStreamCaptureUnsupported"
    [finding] = [f for f in diagnose(trace).findings if f.id == "GD101"]
    syncs = trace.tables["syncs"]
    assert syncs.column("graph")[-1] == graph.id  # the sync refused inside the capture
    assert finding.graph == graph.id


def test_an_unjoined_fork_is_named_by_its_wait(tmp_path: Path) -> None:
    trace, _ = translated(recorded_lines("native_unjoined_fork"), tmp_path)
    ops = [op.op for op in trace.tables["stream_ops"]]
    assert ops == ["record", "wait_event"]
    [finding] = [f for f in diagnose(trace).findings if f.id == "GD103"]
    assert "forked at" in finding.title  # the line is the recording's (native_expectations)


def test_a_line_that_is_not_an_event_is_noted(tmp_path: Path) -> None:
    lines = recorded_lines("native_unjoined_fork")
    trace, _ = translated([lines[0], "{not json", json.dumps({"k": "sync"}), *lines[1:]],
                          tmp_path)
    assert len([n for n in trace.meta.not_recorded if n.what == CUPTI_PART]) == 2
    assert trace.graphs  # the rest still read


def test_a_copy_the_capture_left_out_makes_the_graph_unsafe(tmp_path: Path) -> None:
    """A synchronous cudaMemcpy inside the capture (the line the library writes for it, put
    between the recorded begin and end of the layer stack's capture): GD308, in CUDA's
    words; the same copy on the capture stream is not written at all."""
    lines = recorded_lines("native_layer_stack")
    begin = next(i for i, line in enumerate(lines) if '"k":"begin_capture"' in line)
    opened = json.loads(lines[begin])
    copy = {"k": "uncaptured", "t": opened["t"] + 1_000, "result": 0,
            "thread": opened["thread"], "call": "cuMemcpyHtoD_v2", "stream": 0,
            "synchronous": 1, "stack": opened["stack"]}
    trace, _ = translated([*lines[:begin + 1], json.dumps(copy), *lines[begin + 1:]], tmp_path)
    [graph] = trace.graphs
    [row] = trace.tables["uncaptured_calls"]
    assert (row.call, row.stream, row.graph, row.phase) == ("cuMemcpyHtoD_v2", 0, graph.id,
                                                            "capture")
    [finding] = [f for f in diagnose(trace).findings if f.id == "GD308"]
    assert finding.title.startswith("cudaMemcpy() at ") and finding.category == "unsafe"
    assert "synchronous, on the legacy default stream" in finding.explanation
    assert "cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream)" in finding.fix
    assert "cudaMallocHost" in finding.fix and "torch" not in finding.fix
    verdict = next(v for v in diagnose(trace).verdicts if v.graph == graph.id)
    assert verdict.kind == "unsafe"


def test_driver_names_are_said_as_a_program_writes_them() -> None:
    from graphdoctor.diagnose.rules.gd308_copy_outside_capture import runtime_call

    assert [runtime_call(name) for name in ("cuMemcpyHtoD_v2", "cuMemcpyAsync_ptsz",
                                            "cuMemsetD32_v2_ptds", "cuMemcpy2DUnaligned_v2",
                                            "cuMemsetD8Async")] == [
        "cudaMemcpy()", "cudaMemcpyAsync()", "cudaMemset()", "cudaMemcpy2D()",
        "cudaMemsetAsync()"]
