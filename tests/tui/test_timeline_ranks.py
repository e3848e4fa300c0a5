"""A distributed run's timeline, as plain data: a group of lanes per rank on one time axis,
the collectives lane, and the moves between ranks."""

from __future__ import annotations

import dataclasses

from graphdoctor.report.document import Report
from graphdoctor.trace.model import Collective, TeardownEvent, Trace
from graphdoctor.tui.events import EventRef, describe, event_span
from graphdoctor.tui.palette import CAPTURED_COLLECTIVE
from graphdoctor.tui.report_view import ReportView
from graphdoctor.tui.timeline.lanes import Lane, MemoryLane, PhaseLane, fit_heights
from graphdoctor.tui.timeline.layout import Window, cells_text, column_edges, column_of
from graphdoctor.tui.timeline.ranks import label_width, lane_in_next_rank, phase_lane_of
from graphdoctor.tui.timeline.view import TimelineState, frame_text
from tests.reports import report_for

WIDTH = 100
HUNG = "dist_extra_allreduce_in_capture"  # rank 1 captures one all_reduce more; the run hangs


def view_of(name: str = HUNG) -> ReportView:
    return ReportView(report_for(name))


def lane(view: ReportView, key: str) -> Lane:
    return next(lane for lane in view.lanes if lane.key == key)


def index_of(view: ReportView, key: str) -> int:
    return next(i for i, lane in enumerate(view.lanes) if lane.key == key)


def row_text(view: ReportView, key: str, window: Window | None = None) -> str:
    return cells_text(lane(view, key).rows(column_edges(window or view.limits, WIDTH))[0][1])


def test_each_rank_has_a_group_of_lanes_headed_by_its_phases() -> None:
    view = view_of()
    ranks = [lane.rank for lane in view.lanes]
    assert ranks == sorted(ranks) and set(ranks) == {0, 1}  # rank 0's group, then rank 1's
    heads = [lane for lane in view.lanes if isinstance(lane, PhaseLane)]
    assert [(h.label, h.key) for h in heads] == [("r0 Phases", "r0/phases"),
                                                 ("r1 Phases", "r1/phases")]
    for each in view.lanes:
        assert each.label.startswith(f"r{each.rank} ") and each.key.startswith(f"r{each.rank}/")
        assert {series.rank for series in each.series} <= {each.rank}
    labels = [lane.label for lane in view.lanes if lane.rank == 1]
    assert labels[:4] == ["r1 Phases", "r1 Findings", "r1 CPU main", "r1 Collectives"]


def test_a_rank_keeps_the_utilisation_of_its_own_gpu_only() -> None:
    gpus = {(lane.rank, lane.label) for lane in view_of().lanes if "util" in lane.label}
    assert gpus == {(0, "r0 GPU0 util"), (1, "r1 GPU1 util")}  # NVML saw both from each rank


def test_the_ranks_share_one_time_axis_as_long_as_the_longest() -> None:
    view = view_of()
    assert view.limits.end == max(rank.end_on_axis for rank in view.rank_views.values())
    assert view.rank_views[0].run_end != view.rank_views[1].run_end
    # the ranks started apart (wall clocks recorded): one's times move by as much
    assert sorted(rank.offset for rank in view.rank_views.values())[0] == 0
    assert max(rank.offset for rank in view.rank_views.values()) > 0


def test_collectives_show_the_extra_captured_one_and_the_teardown_that_never_returned() -> None:
    view = view_of()
    extra = view.trace_of(1).tables["collectives"][4]
    assert extra.graph == 0  # captured, on rank 1 only
    at = extra.t + view.of(1).offset  # on the job's axis
    capture = Window(at - 50_000_000, at + 50_000_000)
    column = column_of(capture, WIDTH, at)
    captured = CAPTURED_COLLECTIVE.glyph
    assert row_text(view, "r1/collectives", capture)[column] == captured
    assert captured not in row_text(view, "r0/collectives", capture)[column:]
    teardown = view.trace_of(0).teardown[0]
    rank0 = row_text(view, "r0/collectives")
    start = column_of(view.limits, WIDTH, teardown.t + view.of(0).offset)
    last = column_of(view.limits, WIDTH, view.rank_views[0].end_on_axis - 1)
    assert set(rank0[start + 1:last + 1]) == {"┅"}  # open until rank 0's recording ends
    assert "┅" not in row_text(view, "r1/collectives")


def pending_report() -> Report:
    """A single-process run whose second all_reduce never returned."""
    trace = Trace()
    trace.tables["collectives"].append(Collective(100, 50, "all_reduce", "default", 0, 8, -1,
                                                  0, -1, "eager"))
    trace.tables["collectives"].append(Collective(1_000, -1, "all_reduce", "default", 1, 8, -1,
                                                  0, -1, "eager"))
    trace.teardown.append(TeardownEvent(400, "begin"))
    trace.teardown.append(TeardownEvent(600, "end"))
    trace.tables["memory"].append((10_000, 0, 0, -1, "eager"))
    return Report(trace)


def test_a_collective_that_never_returned_runs_open_to_the_end_of_the_run() -> None:
    view = ReportView(pending_report())
    collectives = lane(view, "collectives")
    assert collectives.rank == -1 and collectives.label == "Collectives"
    text = row_text(view, "collectives")
    pending = column_of(view.limits, WIDTH, 1_000)
    assert set(text[pending + 1:]) == {"┅"} and text[:pending].strip("░▒▓█═ ") == ""
    assert "═" in text  # the teardown that returned
    assert event_span(view.trace, EventRef("collectives", 1)) == (1_000, 1_000)
    details = describe(view.trace, EventRef("collectives", 1))
    assert details.title == "all_reduce #1 of group default"
    assert ("outcome", "never returned") in details.fields
    assert event_span(view.trace, EventRef("teardown", 0)) == (400, 600)
    teardown = describe(view.trace, EventRef("teardown", 0))
    assert teardown.title == "destroy_process_group()"
    assert list(dict(teardown.fields)) == ["when"] and teardown.fields[0][1].endswith(
        " for 200 ns")


def test_events_and_lanes_carry_their_rank() -> None:
    view = view_of()
    ref = EventRef("collectives", 4, 1)
    t = view.trace_of(1).tables["collectives"].data["t"][4] + view.of(1).offset
    found = lane(view, "r1/collectives").locate(ref, t)
    assert found is not None and found.ref == ref
    assert lane(view, "r0/collectives").locate(EventRef("collectives", 4, 0), t) is None
    assert lane(view, "r1/collectives").locate(EventRef("collectives", 4, 0), t) is None
    assert view.describe(ref).title == "rank 1 · all_reduce #4 of group default, captured in " \
                                       "graph 0"
    assert view.span_of(ref) == (t, t + view.trace_of(1).tables["collectives"].data["dur"][4])


def test_evidence_resolves_in_its_ranks_trace() -> None:
    view = view_of()
    diverged = next(f for f in view.findings if f.name == "ranks-diverged")
    (item, ref), *graphs = view.evidence(diverged)  # then each rank's graph (its NCCL kernels)
    assert item.rank == 1 and ref == EventRef("collectives", 4, 1)
    assert [r.rank for _, r in graphs] == [0, 1]
    assert len(view.trace_of(0).tables["collectives"]) == 4  # no such row on rank 0
    unranked = dataclasses.replace(diverged, evidence=(dataclasses.replace(item, rank=-1),))
    assert view.evidence(unranked)[0][1] == ref  # evidence naming no rank: its finding's


def test_ranks_are_named_as_the_report_names_them() -> None:
    view = view_of()
    assert view.multi_rank and view.ranks == [0, 1]
    assert [view.rank_key(r) for r in (-1, 0, 1, 7)] == [0, 0, 1, 0]
    single = ReportView(report_for("item_in_capture"))
    assert not single.multi_rank and single.rank_key(0) == single.rank_key(3) == -1


def test_labels_get_room_for_the_rank() -> None:
    view = view_of()
    assert label_width(view.lanes) == 16
    assert label_width(ReportView(report_for("item_in_capture")).lanes) == 13
    lines = frame_text(view.lanes, TimelineState(view.limits, 0), 60, label_width=15)
    assert lines[index_of(view, "r0/stream:0") + 1].startswith("r0 default strm")


def test_the_phases_of_a_lane_are_its_ranks() -> None:
    view = view_of()
    assert phase_lane_of(view.lanes, index_of(view, "r1/collectives")) is lane(view, "r1/phases")
    assert phase_lane_of(view.lanes, index_of(view, "r0/syncs")) is lane(view, "r0/phases")


def test_brackets_move_to_the_same_lane_on_the_next_rank() -> None:
    view = view_of()
    lanes = view.lanes
    r0_collectives, r1_collectives = (index_of(view, f"r{r}/collectives") for r in (0, 1))
    assert lane_in_next_rank(lanes, r0_collectives, 1) == r1_collectives
    assert lane_in_next_rank(lanes, r1_collectives, -1) == r0_collectives
    assert lane_in_next_rank(lanes, r1_collectives, 1) == r1_collectives  # no rank 2
    capture = next(i for i, each in enumerate(lanes) if each.label == "r0 s2 capture")
    assert lanes[lane_in_next_rank(lanes, capture, 1)].label == "r1 s2 capture"  # by name
    util = index_of(view, "r0/gpu:0")  # rank 1 has no GPU0 lane: its first lane instead
    assert lane_in_next_rank(lanes, util, 1) == index_of(view, "r1/phases")
    single = ReportView(report_for("item_in_capture")).lanes
    assert lane_in_next_rank(single, 2, 1) == 2


def test_the_ranks_share_the_spare_rows_of_a_tall_terminal() -> None:
    view = view_of()
    memory = [each for each in view.lanes if isinstance(each, MemoryLane)]
    fit_heights(view.lanes, 18)
    assert [m.height for m in memory] == [6, 6]  # 9 spare rows each, a third of them
    single = ReportView(report_for("item_in_capture")).lanes
    fit_heights(single, 18)
    assert next(m for m in single if isinstance(m, MemoryLane)).height == 8
