"""What the scenarios of diagnosis on real code, round three, must show: the line to change
and a fix that fits. PyTorch's recipe measured from its own warmup; a rebound input named at
the rebinding; ranks that diverge named at the branch; one graph per size told apart from
recompiles; known errors given their own fix. Lines are found in the scripts' own source.
Registered in :data:`tests.expectations.EXPECTATIONS`, which imports this module."""

from __future__ import annotations

from typing import Any

from graphdoctor.diagnose import compile_costs, diagnose, diagnose_ranks
from graphdoctor.diagnose.findings import Finding
from graphdoctor.diagnose.measure import WANTED_SAMPLES
from graphdoctor.facts import queries
from graphdoctor.trace.event_kinds import FREED, REBOUND
from graphdoctor.trace.model import Trace
from graphdoctor.trace.names import CALLEES_BASIS, CAPTURED, RECOMPILE
from tests import frozen_expectations
from tests.expectations import (
    captured_collectives,
    expect,
    expect_ranks,
    failed_with,
    graphs,
    measured_as_the_script_timed_it,
    user_line,
)


def line_of(script: str, text: str, after: str = "") -> int:
    """The frozen-value scenarios' helper, reached when called (either module may be
    imported first)."""
    return frozen_expectations.line_of(script, text, after)


def located(finding: Finding, script: str, line: int) -> None:
    frozen_expectations.located(finding, script, line)


def finding_of(findings: list[Finding], rule: str) -> Finding:
    [finding] = [f for f in findings if f.id == rule]
    return finding


@expect("recipe_whole_network_docs")
def _recipe(trace: Trace, note: dict[str, Any]) -> None:
    script = "recipe_whole_network_docs.py"
    assert note["exit_code"] == 0 and note["self_timing"]["speedup"] > 1
    [graph] = graphs(trace)
    assert graph.status == CAPTURED and queries.replay_count(trace, graph) == 10
    assert user_line(trace, graph.stack) == (script, line_of(script, "with torch.cuda.graph(g)"))
    # the inline block's own calls of torch, each timed at the warmup loop's calls of it
    assert [trace.functions[i].name for i in graph.callees] == [
        "Sequential.forward", "MSELoss.forward", "Tensor.backward", "SGD.step"]
    assert graph.basis == CALLEES_BASIS and not graph.uncovered
    [verdict] = measured_as_the_script_timed_it(trace, note, "graph 0")
    eager = verdict.measurements["eager"]
    assert eager["n"] == 2 < WANTED_SAMPLES  # 3 warmup iterations, the first cold
    assert "a small sample (eager on 2" in verdict.summary
    assert "eagerly" not in verdict.summary  # it asks for no call the script made


def freed_at_rebinding(trace: Trace, script: str, rebinding: str, read: str) -> None:
    """One captured input freed, its location the line that rebound its name, and the
    captured line that read it beside it."""
    [event] = [e for e in trace.input_events if e.kind == FREED]
    assert user_line(trace, event.dropped) == (script, line_of(script, rebinding))
    assert user_line(trace, event.stack) == (script, line_of(script, read))
    finding = finding_of(diagnose(trace).findings, "GD302")
    located(finding, script, line_of(script, rebinding))
    assert f"used at {script}:{line_of(script, read)}" in finding.title


@expect("real_rebound_input_tv_infer")
def _rebound(trace: Trace, note: dict[str, Any]) -> None:
    assert note["exit_code"] == 0 and note["truth"].startswith("stale")
    freed_at_rebinding(trace, "real_rebound_input_tv_infer.py", "x = next_batch()  # the",
                       "out = model(x)")


@expect("real_rebound_batches_tv_infer")
def _rebound_batches(trace: Trace, note: dict[str, Any]) -> None:
    script = "real_rebound_batches_tv_infer.py"
    assert note["exit_code"] == 0 and note["truth"].startswith("stale")
    # nothing is freed (the list holds every batch): the name is found holding another
    # tensor at the first replays, and the line that binds it again is the for loop's
    [event] = trace.input_events
    assert event.kind == REBOUND
    assert user_line(trace, event.stack) == (script, line_of(script, "out = model(x)"))
    loop = line_of(script, "for x in batches[1:]:")
    assert user_line(trace, event.dropped) == (script, loop)
    finding = finding_of(diagnose(trace).findings, "GD302")
    located(finding, script, loop)
    assert "replays read the old one" in finding.title and "copy_" in finding.fix


@expect_ranks("dist_branch_extra_collective")
def _branch(traces: dict[int, Trace], note: dict[str, Any]) -> None:
    script = "dist_branch_extra_collective.py"
    assert note["exit_code"] == 124
    assert [len(captured_collectives(traces[r])) for r in (0, 1)] == [1, 2]
    # each graph's anatomy: one NCCL kernel per captured collective
    assert [graphs(traces[r])[0].anatomy.nccl_kernels for r in (0, 1)] == [1, 2]
    # the extra all_reduce is made at the helper's line, shared by both ranks
    helper = line_of(script, "dist.all_reduce(t)")
    assert user_line(traces[1], captured_collectives(traces[1])[-1].stack) == (script, helper)
    # no input freed: the block rebinds `out` before reading it
    assert not traces[0].input_events and not traces[1].input_events
    finding = finding_of(diagnose_ranks(traces).findings, "GD402")
    branch = line_of(script, "out = reduce_across_ranks(out)  # the culprit")
    located(finding, script, branch)
    assert finding.rank == 1 and finding.measurements["departures"] == {"1": f"{script}:{branch}"}
    assert finding.measurements["nccl_kernels"] == {"0": {"0": 1}, "1": {"0": 2}}


@expect("real_tv_compile_batch_sizes")
def _batch_sizes(trace: Trace, note: dict[str, Any]) -> None:
    assert note["exit_code"] == 0 and note["self_timing"]["sizes"] == 64
    sizes = compile_costs.sizes_recorded(trace)
    recorded = [s for per_compile in sizes.values() for s in per_compile]
    assert len(recorded) == len(set(recorded)) == 62  # every size but the two compiled fixed
    assert len([g for g in graphs(trace) if g.api == "torch.compile"]) == 64
    assert len([e for e in trace.compile_events if e.kind == RECOMPILE]) == 2
    diagnosis = diagnose(trace)
    finding = finding_of(diagnosis.findings, "GD205")
    assert (finding.measurements["per_size"], finding.measurements["sizes"]) == (62, 62)
    assert finding.measurements["recompiles"] == 2 and finding.measurements["pool_bytes"] > 0
    assert "cudagraph_skip_dynamic_graphs" in finding.fix and "mark_dynamic" not in finding.fix
    [verdict] = diagnosis.verdicts
    assert "at each recompile" not in verdict.summary


@expect("real_adam_default_capture")
def _adam(trace: Trace, note: dict[str, Any]) -> None:
    script = "real_adam_default_capture.py"
    assert note["exit_code"] == 1
    step = line_of(script, "opt.step()", after="with torch.cuda.graph(g)")
    failed_with(trace, script, step, text="capturable is False")
    finding = finding_of(diagnose(trace).findings, "GD108")
    assert "torch.optim.Adam(params, ..., capturable=True)" in finding.fix
    assert finding.title.startswith("Adam.step() was captured")


@expect("cudnn_benchmark_in_capture")
def _cudnn(trace: Trace, note: dict[str, Any]) -> None:
    script = "cudnn_benchmark_in_capture.py"
    assert note["exit_code"] == 1
    failed_with(trace, script, line_of(script, "static_y = model(static_x)"),
                text="FIND was unable to find an engine")
    finding = finding_of(diagnose(trace).findings, "GD110")
    assert "cudnn.benchmark" in finding.fix and "shapes the capture uses" in finding.fix


@expect_ranks("dist_barrier_in_capture")
def _barrier(traces: dict[int, Trace], note: dict[str, Any]) -> None:
    script = "dist_barrier_in_capture.py"
    assert note["exit_code"] == 1
    for trace in traces.values():
        failed_with(trace, script, line_of(script, "dist.barrier()  # the culprit"),
                    cuda_error="cudaErrorStreamCaptureUnsupported")
    found = [f for f in diagnose_ranks(traces).findings if f.id == "GD101"]
    assert sorted(f.rank for f in found) == [0, 1]  # each rank's own capture failed there
    for finding in found:
        located(finding, script, line_of(script, "dist.barrier()  # the culprit"))
        assert finding.title.startswith("barrier() is not permitted while a stream captures")
        assert finding.fix.startswith("Move barrier() out of the captured code")
