"""The rule list, the engine's isolation of a failing rule, and edge cases of single rules
on small traces built inline."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
import textwrap

import pytest

import graphdoctor.diagnose.rules as rules_package
from graphdoctor.diagnose import diagnose
from graphdoctor.diagnose.findings import ERROR, FAILED, Rule
from graphdoctor.diagnose.rules import ALL_RULES, rule_named
from graphdoctor.diagnose.view import TraceView
from graphdoctor.report.document import build
from graphdoctor.report.io import load
from graphdoctor.trace.model import (
    Call,
    ErrorLink,
    ExceptionRecord,
    Frame,
    Graph,
    MemorySample,
    Replay,
    StreamOp,
    Sync,
    Trace,
)
from graphdoctor.trace.phases import Interval, derive
from tests.reports import report_for, scenario_names


def test_every_rule_module_is_listed_once_with_unique_ids() -> None:
    modules = {m.name for m in pkgutil.iter_modules(rules_package.__path__)}
    listed = {r.check.__module__.rsplit(".", 1)[-1] for r in ALL_RULES}
    assert modules == listed
    assert len({r.id for r in ALL_RULES}) == len({r.name for r in ALL_RULES}) == len(ALL_RULES)


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.name)
def test_rule_explains_itself(rule: Rule) -> None:
    assert rule.name == rule.name.lower() and " " not in rule.name
    assert "How to fix" in rule.explanation and len(rule.title) < 100
    assert rule_named(rule.id) is rule and rule_named(rule.name) is rule


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.name)
def test_every_rule_is_silent_on_an_empty_trace(rule: Rule) -> None:
    assert list(rule.check(TraceView(Trace()))) == []


@pytest.fixture(scope="module")
def cpu_only_trace(tmp_path_factory: pytest.TempPathFactory) -> Trace:
    folder = tmp_path_factory.mktemp("cpu")
    script = folder / "cpu_only.py"
    script.write_text(textwrap.dedent("""
        import torch
        x = torch.ones(64, 64)
        for _ in range(3):
            x = torch.tanh(x @ x) + x.sum().item()
    """))
    report = folder / "r.json"
    subprocess.run([sys.executable, "-m", "graphdoctor", "run", "-q", "-o", str(report),
                    str(script)], check=True, timeout=120)
    return load(report).trace


@pytest.mark.slow
@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.name)
def test_every_rule_is_silent_on_a_machine_without_cuda(rule: Rule, cpu_only_trace: Trace) -> None:
    assert not cpu_only_trace.meta.cuda_available
    assert list(rule.check(TraceView(cpu_only_trace))) == []


def test_a_failing_rule_becomes_an_internal_error_and_the_report_still_renders() -> None:
    def broken(view: object) -> list[object]:
        raise ZeroDivisionError("bad maths")

    rule = Rule("GD999", "broken-rule", broken, "Broken.\n\nHow to fix: nothing.", ERROR, FAILED)
    trace = Trace()
    diagnosis = diagnose(trace, rules=(rule, *ALL_RULES))
    assert [f.name for f in diagnosis.findings] == ["internal-error"]
    assert "broken-rule" in diagnosis.findings[0].title
    assert build(trace, diagnosis).diagnosis.findings[0].id == "GD000"
    with pytest.raises(ZeroDivisionError):
        diagnose(trace, rules=(rule,), strict=True)


# -- small traces --------------------------------------------------------------------------
def manual_graph_trace(eager_us: float, replay_us: float, host_us: float, n: int = 20) -> Trace:
    trace = Trace()
    trace.frames = [Frame("/u/t.py", 5, "<module>", "user"), Frame("/u/t.py", 9, "step", "user")]
    trace.stacks = [(0,), (0, 1)]
    trace.graphs = [Graph(0, "torch.cuda.graph", "captured", 100, 200, pool="(1, 0)",
                          stream=7, stack=0, callees=(0,))]
    for i in range(n):
        trace.tables["calls"].append(Call(1000 + i * 10_000, int(host_us * 1000),
                                          int(eager_us * 1000), 0, "eager", -1))
        trace.tables["replays"].append(Replay(500_000 + i * 10_000, 3000, int(replay_us * 1000),
                                              0, 7, 0))
    trace.phases = derive([Interval(100, 200, "capture", 0),
                           Interval(500_000, 500_000 + n * 10_000, "replay", 0)], 10**7)
    return trace


def names(trace: Trace) -> set[str]:
    return {f.name for f in diagnose(trace).findings}


def test_gpu_bound_needs_no_speedup_and_small_launch_share() -> None:
    assert "gpu-bound" in names(manual_graph_trace(1000, 990, 20))
    assert "gpu-bound" not in names(manual_graph_trace(1300, 990, 20))  # 1.3x: a real win
    assert "gpu-bound" not in names(manual_graph_trace(1000, 990, 400))  # launches cost 40%


def test_verdict_thresholds() -> None:
    kinds = [diagnose(manual_graph_trace(e, 100, 10)).verdicts[0].kind for e in (105, 115, 90)]
    assert kinds == ["neutral", "faster", "slower"]


def test_too_few_samples_still_make_a_figure_said_to_rest_on_a_small_sample() -> None:
    verdict = diagnose(manual_graph_trace(500, 100, 10, n=2)).verdicts[0]
    assert verdict.kind == "faster" and verdict.speedup == 5.0
    assert "a small sample (eager on 2 and replay on 2, fewer than 3)" in verdict.summary


def with_syncs(trace: Trace, count: int) -> Trace:
    for i in range(count):
        trace.tables["syncs"].append(Sync(500_500 + i * 10_000, "item", -1, -1, 0, 1, "replay"))
    return trace


def test_sync_between_replays_threshold() -> None:
    assert "sync-between-replays" in names(with_syncs(manual_graph_trace(500, 100, 10), 20))
    assert "sync-between-replays" not in names(with_syncs(manual_graph_trace(500, 100, 10), 3))


def memory_trace(allocated_mib: list[int]) -> Trace:
    trace = manual_graph_trace(500, 100, 10)
    for i, mib in enumerate(allocated_mib):
        trace.tables["memory"].append(MemorySample(500_000 + i * 20_000, mib * 2**20, 2**30, 0,
                                                   "replay"))
    return trace


def test_memory_growth_must_be_large_and_steady() -> None:
    assert "memory-growth-across-replays" in names(memory_trace([10, 40, 80, 120, 160]))
    assert "memory-growth-across-replays" not in names(memory_trace([10, 20, 30, 40, 50]))
    assert "memory-growth-across-replays" not in names(memory_trace([10, 200, 10, 200, 100]))


def pools_trace(pools: list[str], shared: bool = False) -> Trace:
    trace = Trace()
    trace.graphs = [Graph(i, "torch.cuda.graph", "captured", 100 * i, 100 * i + 50, pool=p,
                          shared_pool=shared, pool_bytes=2**20) for i, p in enumerate(pools)]
    return trace


def test_private_pools_rule_needs_three_unshared_pools() -> None:
    assert "private-pool-per-graph" in names(pools_trace(["(1, 0)", "(2, 0)", "(3, 0)"]))
    assert "private-pool-per-graph" not in names(pools_trace(["(1, 0)", "(2, 0)"]))
    assert "private-pool-per-graph" not in names(pools_trace(["(1, 0)"] * 3, shared=True))


def failed_capture(links: list[ErrorLink], ops: list[StreamOp] = ()) -> Trace:  # type: ignore[assignment]
    trace = Trace()
    trace.frames = [Frame("/u/t.py", 12, "<module>", "user")]
    trace.stacks = [(0,)]
    trace.graphs = [Graph(0, "torch.cuda.graph", "failed", 100, 200, stream=7, stack=0)]
    trace.exceptions = [ExceptionRecord(0, 150, "capture_end", 0, 0, tuple(links))]
    for op in ops:
        trace.tables["stream_ops"].append(op)
    return trace


def test_unjoined_fork_through_an_event_is_found() -> None:
    link = ErrorLink("AcceleratorError", "capturing stream has unjoined work",
                     "cudaErrorStreamCaptureUnjoined", 0)
    ops = [StreamOp(110, "record", 7, 99, 0, 0, 0, "capture"),
           StreamOp(120, "wait_event", 8, 99, 0, 0, 0, "capture")]
    findings = diagnose(failed_capture([link], ops)).findings
    assert [f.name for f in findings] == ["unjoined-side-stream"]
    assert findings[0].evidence[0].kind == "stream_ops"


def test_an_unrecognised_failure_still_gets_one_finding() -> None:
    link = ErrorLink("AcceleratorError", "CUDA error: an illegal memory access",
                     "cudaErrorIllegalAddress", 0)
    findings = diagnose(failed_capture([link])).findings
    assert [f.name for f in findings] == ["capture-failed"]
    assert "an illegal memory access" in findings[0].title


def test_each_failed_capture_gets_exactly_one_failure_finding() -> None:
    for name in scenario_names():
        report = report_for(name)
        for graph in report.trace.graphs:
            if graph.status == "failed" and not graph.internal:
                failures = [f for f in report.diagnosis.findings  # this rank's
                            if f.graph == graph.id and f.category == "failed"
                            and f.rank in (-1, report.trace.meta.rank)]
                assert len(failures) == 1, (name, [f.name for f in failures])
