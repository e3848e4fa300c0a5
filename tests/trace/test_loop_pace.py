"""The loop's pace: GPU time per replay over spans between timed replays that the script
issued back to back, and what a verdict makes of it. The spans are stood in for here (the
recorder writes them from CUDA events on a GPU; `tiny_graph`'s recording shows them)."""

from __future__ import annotations

import dataclasses

from graphdoctor.diagnose import diagnose
from graphdoctor.trace import loop_pace
from graphdoctor.trace.assemble import assemble
from tests.diagnose.test_engine_and_edges import manual_graph_trace

STEP, HOST = 5_000, 4_000  # a replay every 5 µs, 4 µs of it in the replay call: gaps of 1 µs


def loop(n: int, every: int = STEP, dur: int = HOST, t: int = 1_000_000) -> tuple[
        list[int], list[int], list[int]]:
    starts = [t + i * every for i in range(n)]
    return starts, [s + dur for s in starts], [0] * n


def test_a_span_of_back_to_back_replays_is_its_gpu_time_over_the_replays_in_it() -> None:
    starts, ends, threads = loop(301)
    spans = [(starts[0], starts[100], 100 * 4_200), (starts[100], starts[300], 200 * 4_300)]
    assert loop_pace.paces(spans, starts, ends, threads) == (4_200, 4_300)


def test_other_host_work_between_replays_leaves_a_span_out() -> None:
    starts, ends, threads = loop(101)
    starts[50:] = [s + 30_000 for s in starts[50:]]  # the script did something else here
    ends[50:] = [e + 30_000 for e in ends[50:]]
    assert loop_pace.paces([(starts[0], starts[100], 500_000)], starts, ends, threads) == ()


def test_graphdoctor_s_own_work_beside_the_timed_replays_does_not_count_as_a_gap() -> None:
    starts, ends, threads = loop(101)
    starts[1:] = [s + 9_000 for s in starts[1:]]  # the first timed one's end event, recorded
    ends[1:] = [e + 9_000 for e in ends[1:]]  # after its row's end
    starts[100] += 9_000  # and the general lane's look before the last timed one starts
    ends[100] += 9_000
    assert loop_pace.paces([(starts[0], starts[100], 100 * 4_000)], starts, ends,
                           threads) == (4_000,)


def test_a_short_span_or_one_across_threads_is_left_out() -> None:
    starts, ends, threads = loop(101)
    short = (starts[0], starts[loop_pace.MIN_REPLAYS - 1], 50_000)
    assert loop_pace.paces([short], starts, ends, threads) == ()
    threads[40] = 1
    assert loop_pace.paces([(starts[0], starts[100], 400_000)], starts, ends, threads) == ()


def test_assembly_gives_each_graph_its_paces_and_refuses_a_stranger_s_bad_span() -> None:
    starts, _, _ = loop(201)
    records: list[list[object]] = [
        ["graph", {"id": 0, "t": 100, "api": "torch.cuda.graph", "stream": 7}],
        ["graph_end", {"id": 0, "t": 200, "status": "captured", "error": -1, "callees": []}]]
    records += [["replay", t, HOST, -1, 0, 7, 3] for t in starts]
    records += [["replay_span", 0, starts[0], starts[100], 100 * 4_100],
                ["replay_span", 0, starts[100], starts[200], 100 * 4_200],
                ["replay_span", 0, starts[200], starts[100], 5],  # backwards
                ["replay_span", 0, starts[0], starts[100], -5],  # negative time
                ["replay_span", 9, starts[0], starts[100], 5]]  # no such graph
    trace = assemble(records)
    assert trace.graphs[0].paces == (4_100, 4_200)
    assert "3 spool records could not be read" in [n.why for n in trace.meta.not_recorded]


def test_a_verdict_on_a_paced_loop_compares_the_pace_and_says_the_lone_figure() -> None:
    """A one-kernel graph in a tight loop: lone replays' event pairs read 8 µs (the launch
    latency with it), the loop's pace 4.2 µs; eager 21 µs."""
    trace = manual_graph_trace(eager_us=21, replay_us=8, host_us=11)
    graph = dataclasses.replace(trace.graphs[0], paces=(4_100, 4_200, 4_300))
    trace.graphs = [graph]
    verdict = diagnose(trace).verdicts[0]
    assert verdict.speedup is not None and round(verdict.speedup, 2) == 5.0  # 21 / 4.2
    assert ("replay GPU time is the loop's pace over 3 runs of replays issued back to back; "
            "a lone replay took 8.0 µs, its launch latency included") in verdict.summary
    assert verdict.measurements["replay_lone"]["median_us"] == 8.0
    unpaced = dataclasses.replace(graph, paces=(4_100, 4_200))  # fewer than 3: lone figure
    trace.graphs = [unpaced]
    assert round(diagnose(trace).verdicts[0].speedup or 0, 2) == round(21 / 8, 2)
