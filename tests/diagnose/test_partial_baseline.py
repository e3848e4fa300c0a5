"""A capture that ran torch work besides the functions timed eagerly (an inline training
step: model(x), then loss.backward() and opt.step()) is not compared with the eager time of
those functions alone: that would claim a speedup of part of the step."""

from __future__ import annotations

import dataclasses

from graphdoctor.diagnose import diagnose
from graphdoctor.diagnose.findings import FASTER, UNMEASURED
from tests.reports import trace_for


def test_a_fully_covered_capture_is_compared() -> None:
    trace = trace_for("launch_bound")
    assert [v.kind for v in diagnose(trace).verdicts] == [FASTER]


def test_torch_work_outside_the_callees_leaves_the_graph_unmeasured_and_says_why() -> None:
    trace = trace_for("launch_bound")
    partial = dataclasses.replace(trace, graphs=[
        dataclasses.replace(g, uncovered=("Tensor.backward", "Adam.step")) for g in trace.graphs])
    verdict = diagnose(partial).verdicts[0]
    assert verdict.kind == UNMEASURED and verdict.speedup is None
    assert "Tensor.backward, Adam.step" in verdict.summary
    assert "put the captured step in one function" in verdict.summary
    assert verdict.measurements["not_covered"] == ["Tensor.backward", "Adam.step"]
