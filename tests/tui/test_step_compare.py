"""The eager step beside the replay, on the bundled GPU recordings: the numbers are the
verdict's, the bars are to scale, and what was not measured is said in words."""

from __future__ import annotations

import dataclasses
import functools
import statistics

import pytest
from textual.app import App, ComposeResult
from textual.widgets import Sparkline, Static

from graphdoctor.diagnose import measure, measure_read_back
from graphdoctor.diagnose.findings import Verdict
from graphdoctor.diagnose.measure import BASELINE_RUN
from graphdoctor.diagnose.view import TraceView
from graphdoctor.trace.event_kinds import Table
from graphdoctor.trace.model import NONE, Replay, Trace
from graphdoctor.tui.report_view import ReportView
from graphdoctor.tui.step_compare.draw import (
    bar_cells,
    bar_lines,
    between_lines,
    drawn,
    series,
    span_text,
)
from graphdoctor.tui.step_compare.figures import (
    EAGER_SIDE,
    NO_EAGER,
    REPLAY_SIDE,
    StepStory,
    SyncSource,
    median_ns,
    notes,
    reading,
    step_story,
    story_for,
)
from graphdoctor.tui.widgets.step_compare import StepCompare
from graphdoctor.units import format_duration, format_speedup
from tests.reports import report_for, scenario_names
from tests.tui.helpers import plain


@functools.cache
def view_of(name: str) -> ReportView:
    return ReportView(report_for(name), name)


def story(name: str, index: int = 0, rank: int = NONE) -> StepStory:
    found = story_for(view_of(name), rank, index)
    assert found is not None
    return found


def bar_rows(found: StepStory, width: int = 80) -> dict[str, str]:
    """The bar lines keyed "eager host", "eager GPU", "replay host", "replay GPU"."""
    lines = [line.plain for line in bar_lines(found, width)][:4]
    keys = ("eager host", "eager GPU", "replay host", "replay GPU")
    return dict(zip(keys, lines))


# What the picture draws and says of a measurement; the shares and the speedup worked out
# from them are not drawn (the story says the verdict's own speedup).
SHOWN = ("replay", "replay_host", "eager", "eager_host", "replays", "not_covered",
         "eager_source", "basis", "eager_of")


def shows_the_verdicts_figures(found: StepStory, verdict: Verdict) -> bool:
    """The story's medians, counts and speedup are the verdict's, as the report keeps them."""
    drawn = found.measurement.as_dict()
    claimed = verdict.measurements.get("speedup") if verdict.speedup is None else verdict.speedup
    return found.speedup == claimed and \
        all(drawn.get(name) == verdict.measurements.get(name) for name in SHOWN)


def cells(line: str) -> int:
    """How many whole cells a bar line fills."""
    return line.count("█")


def test_launch_bound_numbers_are_the_verdicts_and_the_replay_bar_is_far_shorter() -> None:
    found = story("launch_bound")
    verdict = view_of("launch_bound").verdict_for(0)
    assert verdict is not None and verdict.kind == "faster"
    assert shows_the_verdicts_figures(found, verdict)
    rows = bar_rows(found)
    assert not rows["eager GPU"].startswith(EAGER_SIDE)  # the side is named on its first row
    assert rows["eager host"].startswith(EAGER_SIDE)
    assert rows["replay host"].startswith(REPLAY_SIDE)
    assert cells(rows["eager GPU"]) >= 40
    assert cells(rows["replay GPU"]) * 6 < cells(rows["eager GPU"])
    assert cells(rows["replay host"]) == 0 and "▏" in rows["replay host"]  # 7.7 µs: a sliver
    assert rows["eager GPU"].endswith(format_duration(verdict.measurements["eager"]["median_us"]
                                                      * 1000))
    assert rows["replay GPU"].endswith("686 µs")


def test_launch_bound_reads_as_host_bound_with_the_verdicts_speedup() -> None:
    found = story("launch_bound")
    verdict = view_of("launch_bound").verdict_for(0)
    assert verdict is not None and verdict.speedup is not None
    line = reading(found)
    assert line.startswith("eager was host-bound: launching took 5.15 ms for 5.17 ms")
    assert line.endswith(f"{format_speedup(verdict.speedup)} faster")
    assert notes(found) == []


def test_gpu_bound_gpu_bars_are_about_equal_and_reads_as_gpu_bound() -> None:
    found = story("gpu_bound")
    rows = bar_rows(found)
    assert abs(cells(rows["eager GPU"]) - cells(rows["replay GPU"])) <= 1
    assert cells(rows["eager host"]) < 3  # 138 µs of launches for 6.5 ms of GPU work
    assert reading(found) == ("the GPU does the same 6.7 ms either way (6.73 ms replayed): "
                              "GPU-bound, graphs cannot help; no speedup (1.00×)")


def test_a_failed_capture_says_there_are_no_replays_and_draws_nothing() -> None:
    found = story("item_in_capture")
    assert found.failed
    assert notes(found) == ["the capture failed, so there are no replays to set beside an "
                            "eager step"]
    assert bar_lines(found, 80) == [] and series(found) == [] and reading(found) == ""
    assert between_lines(found) == []


def test_no_eager_step_is_said_and_the_replay_is_still_drawn() -> None:
    found = story("sync_between_replays")
    assert NO_EAGER in notes(found) and reading(found) == ""
    rows = bar_rows(found)
    assert rows["eager host"].endswith("not timed")
    assert rows["replay GPU"].endswith("218 µs")


def test_the_syncs_between_replays_are_counted_with_their_line() -> None:
    found = story("sync_between_replays")
    assert found.syncs == 299
    assert [(s.where, s.count) for s in found.sync_sources] == \
        [("fixtures/scripts/sync_between_replays.py:25 in <module>", 299)]
    text = "\n".join(line.plain for line in between_lines(found))
    assert "299 syncs between replays, from fixtures/scripts/sync_between_replays.py:25" in text


def test_gaps_between_replays_are_one_fewer_than_replays_with_their_median() -> None:
    found = story("launch_bound")
    assert len(found.gaps) == 999 and min(found.gaps) >= 0
    first = between_lines(found)[0].plain
    assert first.startswith(f"gap between replays: median "
                            f"{format_duration(statistics.median(found.gaps))}")
    assert "(999 gaps)" in first
    one = dataclasses.replace(found, syncs=1, sync_sources=(SyncSource("a.py:3 in f", 1),))
    assert between_lines(one)[1].plain == "1 sync between replays, from a.py:3 in f (1)"


def test_torchs_own_sync_between_replays_is_not_counted_as_the_users() -> None:
    """compile_healthy's one sync between replays is cudagraph_trees recording a graph
    (torch's frames innermost): rule GD203 does not count it, so neither does the picture."""
    assert between_lines(story("compile_healthy", 1))[1].plain == "no syncs between replays"


def test_a_compiled_graph_shows_its_functions_verdict_numbers_and_input_copies() -> None:
    view = view_of("compile_healthy")
    found = story("compile_healthy", 1)
    verdict = next(v for v in view.verdicts if v.function == 0)
    assert found.compiled and shows_the_verdicts_figures(found, verdict)
    assert "per call of Sequential.forward()" in found.basis
    assert between_lines(found)[-1].plain == \
        "each replay first copies 1 input (2.0 KiB) into the graph"
    internal = story("compile_healthy", 0)
    assert "captured but never replayed: there is no replay to compare" in notes(internal)
    assert bar_lines(internal, 80) == []


def test_the_covering_function_is_named_and_its_median_drawn() -> None:
    found = story("real_tv_resnet_train_capture")
    assert found.basis == ("an eager step is a call of train_step(), which made every call "
                           "the capture made")
    assert bar_rows(found)["eager host"].endswith("7.79 ms")
    assert reading(found).endswith("3.73× faster")


def test_each_rank_is_measured_from_its_own_trace() -> None:
    view = view_of("dist_healthy_capture")
    for rank in view.ranks:
        verdict = view.verdict_for(0, rank)
        assert verdict is not None
        assert shows_the_verdicts_figures(story("dist_healthy_capture", 0, rank), verdict)
    assert story("dist_healthy_capture", 0, 0).measurement != \
        story("dist_healthy_capture", 0, 1).measurement


@pytest.mark.parametrize("name", scenario_names())
def test_every_recorded_graph_has_its_verdicts_numbers_and_fits_any_width(name: str) -> None:
    view = view_of(name)
    for rank in view.ranks or [NONE]:
        for index, graph in enumerate(view.trace_of(rank).graphs):
            found = story(name, index, rank)
            for width in (80, 200):
                assert all(len(line.plain) <= width for line in bar_lines(found, width)[:5])
            verdict = view.verdict_for(graph.id, rank) or next(
                (v for v in view.verdicts if graph.function != NONE
                 and v.function == graph.function and view.rank_key(v.rank) == rank), None)
            if verdict is not None and verdict.measurements and not graph.internal:
                assert shows_the_verdicts_figures(found, verdict), (rank, index)
            assert notes(found) or reading(found), (rank, index)


def test_a_graph_index_past_the_end_has_no_story() -> None:
    assert story_for(view_of("launch_bound"), NONE, 1) is None


def test_bars_fit_the_width_and_grow_with_it() -> None:
    found = story("launch_bound")
    for width in (80, 200):
        assert all(len(line.plain) <= width for line in bar_lines(found, width)[:5])
    assert cells(bar_rows(found, 200)["eager GPU"]) > 2 * cells(bar_rows(found, 80)["eager GPU"])


def test_bar_cells_are_to_an_eighth_and_never_vanish() -> None:
    assert bar_cells(500, 1000, 10) == "█████"
    assert bar_cells(1000, 1000, 10) == "█" * 10
    assert bar_cells(1, 1000, 10) == "▏"
    assert bar_cells(550, 1000, 10) == "█████▌"  # half a cell: four eighths
    assert bar_cells(0, 1000, 10) == ""


def test_a_stall_is_cut_off_in_the_sparkline_but_named_beside_it() -> None:
    """One replay held 7.17 s (as --full's profiled replay was timed before it was left
    untimed), among the recording's 6.7 ms ones."""
    trace = report_for("gpu_bound").trace
    rows = list(trace.tables["replays"])
    rows[3] = rows[3]._replace(dur=7_166_929_294, gpu=7_166_767_089)
    found = _measured_story(_with_replays(trace, rows))
    replay_gpu = next(s for s in series(found) if s.label == "replay GPU")
    assert max(replay_gpu.values) > 7e9
    assert max(drawn(replay_gpu.values)) < 10e6
    assert span_text(replay_gpu.values).startswith("5.79 ms – 7.17 s, drawn to p95 ")
    eager_gpu = next(s for s in series(found) if s.label == "eager GPU")
    assert drawn(eager_gpu.values) == [float(v) for v in eager_gpu.values]


def _with_replays(trace: Trace, rows: list[Replay]) -> Trace:
    tables = dict(trace.tables)
    tables["replays"] = Table(Replay)
    for row in rows:
        tables["replays"].append(row)
    return dataclasses.replace(trace, tables=tables, replay_counts={})


def _measured_story(trace: Trace) -> StepStory:
    """The story of the trace's first graph, with the measurement its verdict would have."""
    graph = trace.graphs[0]
    m = measure.of_graph(TraceView(trace), graph)
    return step_story(trace, graph, m, m.speedup)


def test_one_replay_only_and_gpu_time_not_measured_are_said() -> None:
    trace = report_for("launch_bound").trace
    replays = list(trace.tables["replays"])
    once = _measured_story(_with_replays(trace, replays[:1]))
    assert "one replay only: there are no gaps between replays" in notes(once)
    assert once.gaps == () and between_lines(once) == []
    untimed = _measured_story(_with_replays(trace, [r._replace(gpu=NONE) for r in replays]))
    assert "the replays' GPU time was not measured: the run ended before it was known" in \
        notes(untimed)
    assert bar_rows(untimed)["replay GPU"].endswith("not measured")
    assert reading(untimed) == ""


def test_eager_figures_from_a_baseline_run_are_drawn_as_the_verdict_has_them() -> None:
    """The verdict's eager medians came from ``run --baseline``: the bars draw them, and no
    eager step of this run's trace is passed off as one of their samples."""
    view = view_of("launch_bound")
    verdict = view.verdict_for(0)
    assert verdict is not None
    borrowed = measure_read_back.from_dict({**verdict.measurements, "eager_source": BASELINE_RUN})
    found = step_story(view.trace, view.trace.graphs[0], borrowed, verdict.speedup)
    assert found.eager_elsewhere and found.eager == ()
    assert bar_rows(found)["eager GPU"].endswith(format_duration(median_ns(borrowed.eager)))
    assert any("--baseline run" in note for note in notes(found))
    assert [s.label for s in series(found)][:1] == ["replay host"]


class _Host(App[None]):
    def __init__(self, view: ReportView, index: int = 0) -> None:
        super().__init__()
        self.view, self.index = view, index

    def compose(self) -> ComposeResult:
        yield StepCompare(self.view, NONE, self.index)


async def test_the_widget_shows_the_medians_and_a_sparkline_per_series() -> None:
    app = _Host(view_of("launch_bound"))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        bars = plain(app.query_one("#step-bars", Static).content, 80)  # type: ignore[arg-type]
        assert "median eager step" in bars and "median replay" in bars
        assert all(len(line) <= 80 for line in bars.splitlines())
        assert len(app.query(Sparkline)) == 5
        shown = plain(app.query_one("#step-reading", Static).content, 80)  # type: ignore[arg-type]
        assert "host-bound" in shown
        between = plain(app.query_one("#step-between", Static).content, 80)  # type: ignore[arg-type]
        assert "8 syncs between replays" in between


async def test_the_widget_redraws_its_bars_for_a_wide_terminal() -> None:
    app = _Host(view_of("launch_bound"))
    async with app.run_test(size=(200, 40)) as pilot:
        await pilot.pause()
        bars = plain(app.query_one("#step-bars", Static).content, 200)  # type: ignore[arg-type]
        eager_gpu = bars.splitlines()[1]
        assert eager_gpu.count("█") > 120


async def test_the_widget_says_a_failed_capture_has_no_replays() -> None:
    app = _Host(view_of("item_in_capture"))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        shown = plain(app.query_one("#step-reading", Static).content, 80)  # type: ignore[arg-type]
        assert "the capture failed, so there are no replays" in shown
        assert not app.query_one("#step-bars", Static).display
        assert len(app.query(Sparkline)) == 0
