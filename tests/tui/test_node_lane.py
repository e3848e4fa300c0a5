"""Replays opened into their graph's nodes on the timeline, replay boundaries, and the legend
line, on recorded GPU runs."""

from __future__ import annotations

from graphdoctor.tui import palette as marks
from graphdoctor.tui.report_view import ReportView
from graphdoctor.tui.timeline import legend
from graphdoctor.tui.timeline.layout import (
    BLANK,
    Window,
    cells_text,
    column_edges,
    write_labels,
)
from graphdoctor.tui.timeline.node_lane import NODE_LANE, NodeLane, short_label
from graphdoctor.tui.timeline.series import Series, queued
from tests.reports import report_for

WIDTH = 120


def node_lane(view: ReportView) -> NodeLane:
    return next(lane for lane in view.lanes if isinstance(lane, NodeLane))


def around_replay(lane: NodeLane, index: int, replays: int = 2) -> Window:
    """A window from just before replay ``index`` (as the stream ran it) over ``replays``."""
    start = lane.replays.times[index]
    end = lane.replays.ends[index + replays - 1]  # type: ignore[index]
    return Window(start - (end - start) // 20, end)


def test_each_replay_opens_into_its_kernels_named_when_zoomed_in() -> None:
    view = ReportView(report_for("launch_bound"))  # 400 kernels: matmul and tanh in turn
    lane = node_lane(view)
    assert lane.key == f"{NODE_LANE}0" and lane.height == 1  # one serial chain: one row
    start, end = lane.replays.times[500], lane.replays.ends[500]  # type: ignore[index]
    whole = cells_text(lane.rows(column_edges(Window(start, end), WIDTH))[0][1])
    assert "tanh" not in whole  # 400 nodes on 120 columns: no room for a name
    twentieth = Window(start, start + (end - start) // 20)  # 20 nodes
    cells = lane.rows(column_edges(twentieth, WIDTH))[0][1]
    text = cells_text(cells)
    assert "tanh" in text and "nvj…" in text  # the kernels' own names, cut to fit
    styles = {style for _, style in cells}  # neighbours in two blues, names on their bar
    assert {"blue", "bright_blue", "black on blue", "black on bright_blue"} <= styles


def test_zoomed_out_the_lane_shows_where_replays_are_in_grey_without_names() -> None:
    view = ReportView(report_for("launch_bound"))
    lane = node_lane(view)
    label, cells = lane.rows(column_edges(view.limits, WIDTH))[0]
    assert label.strip() == "└ nodes"
    drawn = [cell for cell in cells if cell != BLANK]
    assert drawn and {style for _, style in drawn} == {"bright_black"}
    assert "tanh" not in cells_text(cells)


def test_back_to_back_replays_show_where_each_starts() -> None:
    view = ReportView(report_for("gpu_bound"))  # 6.8 ms replays queued on the GPU
    lane = node_lane(view)
    window = around_replay(lane, 100, 3)
    stream = next(lane for lane in view.lanes if lane.key == "stream:0")
    edges = column_edges(window, WIDTH)
    assert cells_text(stream.rows(edges)[0][1]).count(marks.BOUNDARY) >= 2
    assert cells_text(lane.rows(edges)[0][1]).count(marks.BOUNDARY) >= 2


def test_the_node_under_the_cursor_is_described_with_how_its_time_was_found() -> None:
    timed = node_lane(ReportView(report_for("gpu_bound")))  # recorded with --full
    start, end = timed.replays.times[100], timed.replays.ends[100]  # type: ignore[index]
    text = timed.describe(start + (end - start) // 2)
    assert text.startswith("graph 0 node ") and "/12 ≈" in text and "longest chain" in text
    assert "kernel time" in text or "median kernel's" in text
    untimed = node_lane(ReportView(report_for("launch_bound")))
    start = untimed.replays.times[10]
    assert "(equal shares)" in untimed.describe(start + 1)
    assert untimed.describe(untimed.replays.times[0] - 1) == ""  # before any replay


def test_a_stream_runs_queued_replays_one_after_another() -> None:
    # launched every 10 ns, each running 100 ns: the stream runs them back to back
    starts, ends = queued([0, 10, 20, 500], [100, 110, 120, 600])
    assert starts == [0, 100, 200, 500] and ends == [100, 200, 300, 600]


def test_span_boundaries_mark_each_start_after_another() -> None:
    series = Series("replays", "replay (GPU)", marks.REPLAY_GPU, [0, 50], ends=[50, 100],
                    boundaries=True)
    text = cells_text([cell or BLANK for cell in series.cells(column_edges(Window(0, 100), 10))])
    assert text == "█████▐████"
    plain = Series("replays", "replay (GPU)", marks.REPLAY_GPU, [0, 50], ends=[50, 100])
    assert marks.BOUNDARY not in cells_text(
        [cell or BLANK for cell in plain.cells(column_edges(Window(0, 100), 10))])


def test_labels_are_cut_to_their_run_and_left_out_of_short_ones() -> None:
    cells = [("█", "blue")] * 12
    keys = ["a"] * 8 + ["b"] * 3 + [None]
    text = cells_text(write_labels(cells, keys, {"a": "vectorized", "b": "tanh"}))
    assert text == "█vecto…█" + "███" + "█"


def test_kernel_names_shortened_to_their_operation() -> None:
    assert short_label("at::native::vectorized_elementwise_kernel<4, "
                       "at::native::tanh_kernel_cuda(at::TensorIteratorBase&)::"
                       "{lambda()#1}, at::detail::Array<char*, 2> >") == "tanh"
    assert short_label("ncclDevKernel_AllReduce_Sum_f32_RING_LL") == "AllReduce_Sum_f32_RING_LL"
    assert short_label("nvjet_sm90_tst_64x8") == "nvjet_sm90_tst_64x8"


def test_the_legend_says_what_the_glyphs_in_view_mean() -> None:
    view = ReportView(report_for("gpu_bound"))
    lane = node_lane(view)
    opened = legend.entries(view.lanes, around_replay(lane, 100, 2), WIDTH)
    meanings = [meaning for _, _, meaning in opened]
    assert "replay (GPU)" in meanings and "kernel" in meanings and "copy" in meanings
    assert "a replay starts" in meanings
    whole = [meaning for _, _, meaning in legend.entries(view.lanes, view.limits, WIDTH)]
    assert "kernel" not in whole  # too narrow to open there
    row = cells_text(legend.line(opened, 40))
    assert len(row) <= 40 and row.endswith("…")
