"""What a verdict says it measured: GPU and host time per step on each side, the samples,
their spread, whether eager was host-bound, which figure decided and why, and where the
eager figures came from; and, unmeasured, exactly what to add."""

from __future__ import annotations

import dataclasses

from graphdoctor.diagnose import diagnose
from graphdoctor.diagnose.findings import FASTER, UNMEASURED, WITHOUT_GRAPHS, Verdict
from graphdoctor.diagnose.measure import BASELINE_RUN, GPU, SAME_RUN
from graphdoctor.trace.model import Call, Function, Meta, Trace
from graphdoctor.trace.names import EAGER_CALL, GRAPHS_ENV, GRAPHS_OFF, STEP_BASIS
from tests.baselines import graphs_off_run
from tests.diagnose.test_engine_and_edges import manual_graph_trace
from tests.reports import local_line, trace_for


def verdicts(trace: Trace, baseline: Trace | None = None) -> list[Verdict]:
    return list(diagnose(trace, read_line=local_line, baseline=baseline).verdicts)


def test_a_speedup_says_both_figures_samples_spread_and_host_bound() -> None:
    verdict = verdicts(trace_for("launch_bound"))[0]
    assert verdict.summary == (
        "7.54× faster: eager 5,169.0 µs vs replay 685.6 µs per step (GPU time, medians of "
        "1002 and 1000, IQR 29% and 1%); host time 5,152.2 µs vs 7.7 µs; eager was "
        "host-bound (launching took 100% of its GPU time); each side's longer figure is what "
        "the loop waits on")
    m = verdict.measurements
    assert (m["figure"], m["host_bound"], m["eager_source"]) == (GPU, True, SAME_RUN)
    assert m["eager"]["p95_us"] >= m["eager"]["p75_us"] >= m["eager"]["median_us"]


def test_a_replay_slower_to_launch_than_to_run_is_timed_by_its_host_time() -> None:
    trace = manual_graph_trace(eager_us=30, replay_us=5, host_us=10)
    trace.tables["replays"].data["dur"] = [12_000] * len(trace.tables["replays"])
    verdict = verdicts(trace)[0]
    assert verdict.speedup is not None and round(verdict.speedup, 2) == 2.5  # 30 / 12
    assert "(eager GPU time vs replay host time," in verdict.summary
    assert "eager host time 10.0 µs, replay GPU time 5.0 µs" in verdict.summary
    assert "eager was not host-bound (launching took 33% of its GPU time)" in verdict.summary
    assert verdict.measurements["figure"] == "eager GPU, replay host"


def test_a_raw_capture_without_eager_calls_says_which_call_to_add() -> None:
    verdict = verdicts(trace_for("sync_between_replays"))[0]
    assert verdict.kind == UNMEASURED
    assert verdict.summary.endswith(
        "to measure one, run `step(static_x)` eagerly 3 times outside the capture, e.g. "
        "`for _ in range(3): step(static_x)` before the replay loop; graphdoctor times each "
        "eager call (--baseline cannot switch a raw capture off)")


def test_a_raw_capture_of_inline_code_says_to_put_it_in_a_function() -> None:
    summary = verdicts(trace_for("memory_growth_replays"))[0].summary
    assert "put the captured code in a function, capture a call of it, and call it eagerly " \
           "3 times outside the capture" in summary


def test_one_eager_call_is_compared_and_said_to_be_a_small_sample() -> None:
    trace = manual_graph_trace(eager_us=30, replay_us=5, host_us=10, n=20)
    trace.tables["calls"].data = {k: v[:1] for k, v in trace.tables["calls"].data.items()}
    trace.functions = [Function(0, "step", "captured", "/u/t.py", 9)]
    verdict = verdicts(trace)[0]
    assert verdict.kind == FASTER and verdict.speedup == 6.0
    assert "medians of 1 and 20, one sample and IQR 0%" in verdict.summary
    assert "a small sample (eager on 1, fewer than 3): the figure stands" in verdict.summary
    assert "eagerly" not in verdict.summary  # no call is asked for: one was made


def test_two_eager_calls_give_their_range() -> None:
    trace = manual_graph_trace(eager_us=30, replay_us=5, host_us=10, n=20)
    trace.tables["calls"].data = {k: v[:2] for k, v in trace.tables["calls"].data.items()}
    trace.tables["calls"].data["gpu"] = [20_000, 40_000]
    summary = verdicts(trace)[0].summary
    assert "medians of 2 and 20, range 20.0-40.0 µs and IQR 0%" in summary
    assert verdicts(trace)[0].measurements["eager"]["low_us"] == 20.0


def test_without_eager_calls_the_python_that_times_them_is_named() -> None:
    trace = manual_graph_trace(eager_us=30, replay_us=5, host_us=10, n=20)
    trace.tables["calls"].data = {k: v[:0] for k, v in trace.tables["calls"].data.items()}
    trace.functions = [Function(0, "step", "captured", "/u/t.py", 9)]
    trace.meta = Meta(python="3.11.9")
    summary = verdicts(trace)[0].summary
    assert "run step() eagerly 3 times outside the capture" in summary
    assert summary.endswith("(graphdoctor times eager calls on Python 3.12 or newer; this run "
                            "used 3.11.9)")


def test_compiled_and_graphed_code_without_eager_calls_point_to_baseline() -> None:
    compiled = verdicts(trace_for("compile_healthy"))[0]
    assert compiled.summary.endswith(
        "use `graphdoctor run --baseline`: it runs the script again with CUDA graphs off (the "
        "same compile without CUDA graphs) and compares per call")
    graphed = verdicts(without_steps(trace_for("real_graphed_callables_autocast")))[0]
    assert "graphs off (the original callables) and compares per call" in graphed.summary


def without_steps(trace: Trace) -> Trace:
    """The trace as if its graphs replayed in no function that ran before they existed."""
    return dataclasses.replace(trace, graphs=[dataclasses.replace(g, step=-1)
                                              for g in trace.graphs])


def test_a_baseline_run_measures_a_compiled_function() -> None:
    trace = trace_for("compile_healthy")
    # replays of about 147 µs (GPU) on the H100 recording, against 600 µs steps in the baseline run
    verdict = verdicts(trace, graphs_off_run(trace.functions, eager_us=600, host_us=560))[0]
    assert verdict.kind == FASTER and verdict.speedup is not None and verdict.speedup > 3
    assert verdict.summary.endswith("eager from the --baseline run (the script run again with "
                                    "CUDA graphs off)")
    assert verdict.measurements["eager_source"] == BASELINE_RUN
    assert verdict.measurements["eager"]["n"] == 50  # the warm-up call does not count


def test_a_baseline_run_measures_make_graphed_callables_forward_graph() -> None:
    trace = without_steps(trace_for("real_graphed_callables_autocast"))
    forward, backward = verdicts(trace, graphs_off_run(trace.functions, 900, 400))[:2]
    assert forward.kind == FASTER and forward.measurements["eager_source"] == BASELINE_RUN
    assert backward.kind == UNMEASURED and backward.summary.endswith(
        "the --baseline run timed no eager call of the code this graph ran (a backward pass's "
        "graph has no call of its own)")


def test_the_step_a_graph_replays_in_comes_before_a_baseline_run() -> None:
    trace = trace_for("real_graphed_callables_autocast")
    for verdict in verdicts(trace, graphs_off_run(trace.functions, 900, 400))[:2]:
        assert verdict.kind == FASTER and verdict.measurements["eager_source"] == SAME_RUN
        assert verdict.measurements["basis"] == STEP_BASIS
        assert "train_step() per call: " in verdict.summary
        assert " before the graph existed vs " in verdict.summary


def test_a_baseline_matches_by_name_where_the_place_differs_and_the_name_is_unique() -> None:
    trace = trace_for("compile_healthy")
    moved = [dataclasses.replace(f, line=f.line + 1) for f in trace.functions]
    assert verdicts(trace, graphs_off_run(moved, 300, 280))[0].kind == FASTER
    twice = moved + [dataclasses.replace(moved[0], file="/elsewhere.py")]
    assert verdicts(trace, graphs_off_run(twice, 300, 280))[0].summary.endswith(
        "the --baseline run timed no eager call of Sequential.forward")


def test_own_eager_calls_come_before_the_baseline_runs() -> None:
    trace = manual_graph_trace(eager_us=30, replay_us=5, host_us=10)
    trace.functions = [Function(0, "step", "captured", "/u/t.py", 9)]
    m = verdicts(trace, graphs_off_run(trace.functions, 900, 400))[0].measurements
    assert m["eager_source"] == SAME_RUN and m["eager"]["median_us"] == 30


def test_a_graphs_off_run_gives_its_functions_their_eager_time() -> None:
    run = graphs_off_run([Function(0, "step", "compiled", "/u/t.py", 9),
                          Function(1, "Net.forward", "graphed", "/u/t.py", 20)], 120, 90)
    off = verdicts(run)
    assert [v.kind for v in off] == [WITHOUT_GRAPHS, WITHOUT_GRAPHS]
    assert off[0].subject == "compiled step (t.py:9)"
    assert off[0].summary == (
        f"ran without CUDA graphs ({GRAPHS_ENV}={GRAPHS_OFF}): 122.4 µs GPU time and 91.8 µs "
        "host time per call (medians of 50, IQR 2%)")
    assert off[1].subject == "graphed Net.forward (t.py:20)"


def test_a_run_with_graphs_on_gives_graphed_functions_no_verdict_of_their_own() -> None:
    trace = Trace(functions=[Function(0, "Net.forward", "graphed", "/u/t.py", 20)])
    trace.tables["calls"].append(Call(0, 1, 1, 0, EAGER_CALL, -1))
    assert verdicts(trace) == []
