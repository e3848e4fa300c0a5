"""The lanes built from recorded GPU runs show what each scenario is about."""

from __future__ import annotations

from graphdoctor.trace.model import CAPTURE
from graphdoctor.tui.events import EventRef
from graphdoctor.tui.palette import FAILED_CAPTURE_SPAN, SYNC_MARKS
from graphdoctor.tui.report_view import ReportView
from graphdoctor.tui.timeline.layout import Window, cells_text, column_edges, column_of
from graphdoctor.tui.timeline.view import TimelineState, frame_text
from tests.reports import report_for

WIDTH = 100


def lane(view: ReportView, key: str):  # type: ignore[no-untyped-def]
    return next(lane for lane in view.lanes if lane.key == key)


def row_text(view: ReportView, key: str, window: Window | None = None, row: int = 0) -> str:
    edges = column_edges(window or view.limits, WIDTH)
    return cells_text(lane(view, key).rows(edges)[row][1])


def test_a_failed_capture_has_a_lane_for_each_thread_stream_and_signal() -> None:
    view = ReportView(report_for("item_in_capture"))
    labels = [lane.label for lane in view.lanes]
    assert labels[:3] == ["Phases", "Findings", "CPU main"]
    assert labels[3:6] == ["default strm", "s1 side", "s2 capture"]
    assert {"Memory", "Syncs", "GPU0 util"} <= set(labels)
    assert "Compile" not in labels  # nothing was compiled: no empty lane


def test_the_sync_that_broke_the_capture_is_an_x_inside_the_capture() -> None:
    view = ReportView(report_for("item_in_capture"))
    sync_time = view.trace.tables["syncs"].data["t"][1]
    graph = view.trace.graphs[0]
    # the capture (70 ms of a 5.5 s run), a little wider on each side
    margin = (graph.capture_end - graph.capture_start) // 10
    window = Window(graph.capture_start - margin, graph.capture_end + margin)
    column = column_of(window, WIDTH, sync_time)
    assert row_text(view, "syncs", window)[column] == SYNC_MARKS[CAPTURE].glyph == "X"
    capture_stream = row_text(view, f"stream:{graph.stream}", window)
    start, end = (column_of(window, WIDTH, t) for t in (graph.capture_start, graph.capture_end))
    # the capture failed: hatched ╳, not the ▒ of a capture, so it shows without colour too
    assert set(capture_stream[start + 1:end]) == {FAILED_CAPTURE_SPAN.glyph} == {"╳"}
    assert "capture" in row_text(view, "phases", window)


def test_the_unjoined_side_stream_shows_its_fork_and_work_inside_the_capture() -> None:
    view = ReportView(report_for("unjoined_side_stream"))
    graph = view.trace.graphs[0]
    capture = Window(graph.capture_start, graph.capture_end + 1)
    side = next(key for key in (lane.key for lane in view.lanes) if key.startswith("stream:")
                and lane(view, key).label.endswith("side"))
    opening = Window(graph.capture_start, graph.capture_start + 10_000_000)
    assert {"w", ">"} <= set(row_text(view, side, opening))  # forked from the capture, entered
    assert "<" in row_text(view, side, capture)  # and left before the capture ended
    assert "w" not in row_text(view, f"stream:{graph.stream}", capture)  # never joined back


def test_eager_steps_and_replays_line_up_on_the_cpu_lane() -> None:
    view = ReportView(report_for("launch_bound"))
    cpu = lane(view, "cpu:0")
    names = {series.name: len(series) for series in cpu.series}
    # the eager history keeps the script's warm-up calls too, all but the cold first one
    assert names["eager call"] == 1002 and names["replay (host)"] == 1000
    replay_phase = next(p for p in view.trace.phases if p.phase == "replay")
    eager_steps = view.trace.tables["calls"].data["t"]
    step_window = Window(eager_steps[10], eager_steps[20])
    assert set(row_text(view, "cpu:0", step_window)) == {"█"}  # the host is busy every step
    replay_window = Window(replay_phase.start, replay_phase.end)
    assert "░" in row_text(view, "cpu:0", replay_window)  # and mostly idle while replaying


def test_memory_labels_the_top_and_bottom_of_its_scale() -> None:
    view = ReportView(report_for("launch_bound"))
    memory = lane(view, "memory")
    labels = [label for label, _ in memory.rows(column_edges(view.limits, WIDTH))]
    assert labels[0].endswith("MiB") and labels[-1] == "0 B" and "allocated" in labels
    memory.height = 4  # room for the lane's name as well
    labels = [label for label, _ in memory.rows(column_edges(view.limits, WIDTH))]
    assert labels[1:3] == ["Memory", "allocated"]


def test_next_event_and_locate() -> None:
    view = ReportView(report_for("item_in_capture"))
    syncs = lane(view, "syncs")
    times = view.trace.tables["syncs"].data["t"]
    first = syncs.next_event(0)
    assert first is not None and first.ref == EventRef("syncs", 0) and first.time == times[0]
    second = syncs.next_event(first.time)
    assert second is not None and second.ref == EventRef("syncs", 1)
    assert syncs.next_event(second.time) is None
    assert syncs.next_event(second.time, forward=False) == first
    assert syncs.locate(EventRef("syncs", 1), times[1]) == second
    assert lane(view, "memory").locate(EventRef("syncs", 1), times[1]) is None
    near = syncs.event_near(times[1] - 5, times[1] + 5, times[1])
    assert near is not None and near.ref == EventRef("syncs", 1)


def test_frame_text_draws_the_axis_and_every_lane() -> None:
    view = ReportView(report_for("item_in_capture"))
    lines = frame_text(view.lanes, TimelineState(view.limits, 0), 60)
    assert lines[0].startswith("time") and "╷0 s" in lines[0]
    assert len(lines) == 1 + sum(lane.height for lane in view.lanes)
    assert all(len(line) == 12 + 60 for line in lines)
