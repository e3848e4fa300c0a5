"""compare's table, JSON and gates, from the committed GPU recordings as the as-written runs
and hand-built runs with CUDA graphs off beside them."""

from __future__ import annotations

import json

from graphdoctor.diagnose import diagnose
from graphdoctor.report.compare import (
    FORMAT,
    MIXED,
    CompareRun,
    VariantInfo,
    compared,
    over_runs,
    to_json,
)
from graphdoctor.report.document import build
from graphdoctor.report.gates import GATE_EXIT
from graphdoctor.report.render.compare import render_compare
from graphdoctor.trace.model import Trace
from graphdoctor.trace.names import GRAPHS_ENV, GRAPHS_OFF
from tests.baselines import graphs_off_run
from tests.reports import local_line, trace_for

VARIANTS = (VariantInfo("as-written"), VariantInfo("graphs-off", ((GRAPHS_ENV, GRAPHS_OFF),)))
HEALTHY = "compiled Sequential.forward (compile_healthy.py:11)"


def run(variant: str, repeat: int, order: int, trace: Trace, baseline: Trace | None = None,
        exit_code: int = 0) -> CompareRun:
    diagnosis = diagnose(trace, read_line=local_line, baseline=baseline)
    report = build(trace, diagnosis, read_line=local_line, baseline=baseline)
    return CompareRun(variant, repeat, order, report, exit_code)


def two_repeats(name: str, eager_us: tuple[float, float]) -> list[CompareRun]:
    """as-written, graphs-off; then graphs-off, as-written: each repeat's eager time given."""
    trace = trace_for(name)
    off = [graphs_off_run(trace.functions, us, us * 0.9) for us in eager_us]
    return [run("as-written", 0, 0, trace, off[0]), run("graphs-off", 0, 1, off[0]),
            run("graphs-off", 1, 2, off[1]), run("as-written", 1, 3, trace, off[1])]


def test_a_row_per_subject_and_variant_with_pooled_samples() -> None:
    result = compared("compile_healthy.py", (), 2, VARIANTS,
                      two_repeats("compile_healthy", (300, 320)))
    written, off = result.rows
    assert (written.subject, written.variant, written.calls) == (HEALTHY, "as-written", "replay")
    assert written.host is not None and written.host.n == 2 * 298  # both repeats' replays
    assert written.gpu is not None and round(written.gpu.median_us, 1) == 146.9  # the H100's
    assert written.verdict is not None and written.verdict.kind == "faster"
    assert written.verdict.kinds == {"faster": 2} and written.verdict.speedup is not None
    assert "eager from the --baseline run" in written.verdict.summary
    assert (off.subject, off.variant, off.calls) == (HEALTHY, "graphs-off", "eager")
    assert off.host is not None and off.host.n == 100 and off.verdict is not None
    assert off.verdict.kind == "graphs-off"


def test_repeats_that_disagree_are_mixed_with_the_median_speedup() -> None:
    result = compared("compile_healthy.py", (), 2, VARIANTS,
                      two_repeats("compile_healthy", (600, 150)))
    verdict = result.rows[0].verdict
    assert verdict is not None and verdict.kind == MIXED
    assert verdict.kinds == {"faster": 1, "neutral": 1}
    assert verdict.speedup is not None and 2.3 < verdict.speedup < 2.8  # (4.08 + 1.02) / 2
    assert "mixed (faster 1, neutral 1) 2." in render_compare(result, width=200)


def test_over_runs_of_no_verdict_is_none() -> None:
    assert over_runs([]) is None


def test_graphs_and_their_callees_get_rows_of_their_own() -> None:
    trace = trace_for("real_graphed_callables_autocast")
    off = graphs_off_run(trace.functions, 900, 400)
    runs = [run("as-written", 0, 0, trace, off), run("graphs-off", 0, 1, off)]
    rows = compared("x.py", (), 1, VARIANTS, runs).rows
    subjects = list(dict.fromkeys(row.subject for row in rows))
    assert subjects == ["graph (make_graphed_callables, real_graphed_callables_autocast.py:33)",
                        "graph (make_graphed_callables, real_graphed_callables_autocast.py:33) "
                        "#2", "graphed Sequential.forward (container.py:248)"]
    forward_written, forward_off = rows[:2]
    assert forward_written.calls == "replay" and forward_written.verdict is not None
    assert forward_written.verdict.kind == "faster"
    assert (forward_off.ran, forward_off.verdict) == (False, None)  # no graph: graphs off
    graphed_written, graphed_off = rows[4:]
    assert graphed_written.ran and graphed_written.calls == ""  # warm-up calls only
    assert graphed_written.host is None
    assert graphed_off.calls == "eager" and graphed_off.verdict is not None


def test_the_json_says_which_run_each_number_came_from() -> None:
    runs = two_repeats("compile_healthy", (300, 320))
    data = json.loads(json.dumps(to_json(compared("compile_healthy.py", ("--n", "3"), 2,
                                                  VARIANTS, runs))))
    assert (data["format"], data["version"], data["args"], data["repeats"]) == (
        FORMAT, 1, ["--n", "3"], 2)
    assert data["variants"][1] == {"name": "graphs-off", "env": {GRAPHS_ENV: GRAPHS_OFF},
                                   "args": []}
    assert [(r["variant"], r["repeat"], r["order"]) for r in data["runs"]] == [
        ("as-written", 0, 0), ("graphs-off", 0, 1), ("graphs-off", 1, 2), ("as-written", 1, 3)]
    row = data["rows"][0]
    assert set(row) == {"subject", "variant", "ran", "calls", "samples", "gpu_us", "host_us",
                        "verdict"}
    assert row["samples"] == 596 and set(row["gpu_us"]) == {"p50", "p95", "n"}
    assert row["gpu_us"]["p95"] >= row["gpu_us"]["p50"]
    assert row["verdict"]["kind"] == "faster" and data["gates"] == [] and data["exit_code"] == 0


def test_the_table_shows_every_figure() -> None:
    text = render_compare(compared("compile_healthy.py", (), 2, VARIANTS,
                                   two_repeats("compile_healthy", (300, 320))), width=200)
    header = next(line for line in text.splitlines() if "GPU p50" in line)
    assert header.split() == ["subject", "variant", "timed", "calls", "GPU", "p50", "GPU",
                              "p95", "host", "p50", "host", "p95", "verdict"]
    assert "as-written   replay" in text and "graphs-off   eager" in text
    assert "1. as-written #1 exited with code 0 after" in text
    assert "graphs-off: GRAPHDOCTOR_GRAPHS=off" in text


def test_fail_on_checks_every_run_and_names_it() -> None:
    runs = two_repeats("compile_healthy", (300, 150))
    result = compared("compile_healthy.py", (), 2, VARIANTS, runs, ("neutral", "slower"))
    assert [(t.condition, t.reason.split(":")[0]) for t in result.trips] == [
        ("neutral", "as-written run 2")]
    assert result.exit_code == GATE_EXIT
    assert "--fail-on" in render_compare(result, width=200)


def test_without_a_gate_the_first_failing_runs_code_stands() -> None:
    trace = trace_for("compile_healthy")
    off = graphs_off_run(trace.functions, 300, 280)
    runs = [run("as-written", 0, 0, trace, off), run("graphs-off", 0, 1, off, exit_code=7)]
    assert compared("x.py", (), 1, VARIANTS, runs).exit_code == 7
