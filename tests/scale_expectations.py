"""What the four-rank recordings must show (fixtures/scripts/dist4_*.py, written as jobs are
written: tensor parallel across data parallel with `new_group`, a pipeline of
point-to-point calls, one rank's failed capture). Each finding names its group, its ranks
and each rank's own line. They need a machine with four GPUs: until one records them they
await their recording (tests/reports.py), and these checks skip."""

from __future__ import annotations

from typing import Any

from graphdoctor.diagnose import diagnose_ranks
from graphdoctor.diagnose.findings import Finding
from graphdoctor.trace.model import Trace
from tests import frozen_expectations
from tests.expectations import captured_collectives, expect_ranks, failed_with, graphs

WORLD = [0, 1, 2, 3]


def line_of(script: str, text: str) -> int:
    """The frozen-value scenarios' helper, reached when called (either module may be
    imported first)."""
    return frozen_expectations.line_of(script, text)


def located(finding: Finding, script: str, line: int) -> None:
    frozen_expectations.located(finding, script, line)


def tensor_parallel(rank: int) -> str:
    """The end of the label of a rank's tensor-parallel pair: ``[2, 3]``."""
    first = rank - rank % 2
    return f"[{first}, {first + 1}]"


def data_parallel(rank: int) -> str:
    return f"[{rank % 2}, {rank % 2 + 2}]"


@expect_ranks("dist4_tp_dp_capture")
def _tp_dp(traces: dict[int, Trace], note: dict[str, Any]) -> None:
    """Healthy: the step (under ``@torch.no_grad()``) measured against its eager calls on
    every rank, faster as the script's own timing says."""
    assert note["exit_code"] == 0 and sorted(traces) == WORLD
    for rank, trace in traces.items():
        groups = [c.group for c in captured_collectives(trace)]
        assert [g.endswith(tensor_parallel(rank)) for g in groups] == [True] * 4 + [False]
        assert groups[4].endswith(data_parallel(rank))
        assert [g.status for g in graphs(trace)] == ["captured"]
    diagnosis = diagnose_ranks(traces)
    findings = diagnosis.findings
    assert not [f for f in findings if f.severity == "error"], [f.title for f in findings]
    assert [v.kind for v in diagnosis.verdicts] == ["faster"] * 4
    assert note["self_timing"]["speedup"] > 5  # the script's own: eager steps vs replays
    [captured] = [f for f in findings if f.id == "GD401"]
    assert "on ranks 0-3 over groups" in captured.title


@expect_ranks("dist4_subgroup_diverge")
def _subgroup(traces: dict[int, Trace], note: dict[str, Any]) -> None:
    script = "dist4_subgroup_diverge.py"
    assert note["exit_code"] == 124 and sorted(traces) == WORLD
    assert [len(captured_collectives(traces[r])) for r in WORLD] == [2, 2, 2, 3]
    findings = diagnose_ranks(traces).findings
    [diverged] = [f for f in findings if f.id == "GD402"]  # the pair {0,1} agrees
    located(diverged, script, line_of(script, "out = reduce_in_pair(out)  # the culprit"))
    assert diverged.rank == 3 and tensor_parallel(3) in diverged.title
    assert "rank 0" not in diverged.title and "rank 1" not in diverged.title
    assert any(f.id == "GD404" for f in findings)


@expect_ranks("dist4_pipeline_p2p_capture")
def _pipeline(traces: dict[int, Trace], note: dict[str, Any]) -> None:
    assert note["exit_code"] == 0 and sorted(traces) == WORLD
    ops = {r: [c.op for c in captured_collectives(traces[r])] for r in WORLD}
    assert ops == {0: ["send"], 1: ["recv", "send"], 2: ["recv", "send"], 3: ["recv"]}
    diagnosis = diagnose_ranks(traces)
    findings = diagnosis.findings
    assert not [f for f in findings if f.id == "GD402"], "point-to-point pairs are no divergence"
    assert [v.kind for v in diagnosis.verdicts] == ["faster"] * 4


@expect_ranks("dist_pipeline_p2p_capture")
def _pipeline_two(traces: dict[int, Trace], note: dict[str, Any]) -> None:
    """Two stages, recorded on 2 GPUs: NCCL captures send and recv, and the replays run
    (the script times them 7.5x faster than its eager step); destroy_process_group() then
    hangs while the graph of the point-to-point communicator is alive."""
    script = "dist_pipeline_p2p_capture.py"
    assert note["exit_code"] == 124 and sorted(traces) == [0, 1]
    assert note["self_timing"]["speedup"] > 2
    assert [c.op for c in captured_collectives(traces[0])] == ["send"]
    assert [c.op for c in captured_collectives(traces[1])] == ["recv"]
    assert all(len(traces[r].tables["replays"]) == 100 for r in (0, 1))
    findings = diagnose_ranks(traces).findings
    assert not [f for f in findings if f.id == "GD402"], "a send and its recv are no divergence"
    teardown = [f for f in findings if f.id == "GD405"]
    assert sorted(f.rank for f in teardown) == [0, 1]
    located(teardown[0], script, line_of(script, "dist.destroy_process_group()"))


@expect_ranks("dist4_one_rank_capture_fails")
def _one_fails(traces: dict[int, Trace], note: dict[str, Any]) -> None:
    script = "dist4_one_rank_capture_fails.py"
    assert note["exit_code"] != 0 and sorted(traces) == WORLD
    culprit = line_of(script, "# the culprit")
    failed_with(traces[2], script, culprit, cuda_error="cudaErrorStreamCaptureUnsupported")
    for rank in (0, 1, 3):
        assert [g.status for g in graphs(traces[rank])] == ["captured"]
    findings = diagnose_ranks(traces).findings
    [failed] = [f for f in findings if f.id == "GD403"]
    assert failed.rank == 2 and "ranks 0, 1, 3 captured theirs" in failed.title
