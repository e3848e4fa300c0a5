"""The capture view on the GPU recordings: each capture told step by step with its lines and
its culprit, forks and joins between streams, graphdoctor's own time apart, and many
graphs from one line read as one group."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from graphdoctor.facts.stream_links import FORK, JOIN, WAIT, stream_links, unjoined_forks
from graphdoctor.tui.capture_story import BEGIN, END, OWN_TIME, capture_links, own_time, story
from graphdoctor.tui.capture_view import capture_lanes, capture_limits, capture_overlays
from graphdoctor.tui.graph_groups import GraphGroup, group_of, group_rows, shown_rows
from graphdoctor.tui.palette import LINK_ENDS, UNJOINED_LINK
from graphdoctor.tui.report_view import ReportView
from graphdoctor.tui.timeline.view import TimelineState, screen_rows
from tests.reports import report_for, scenario_names, scenario_params


def test_a_sync_in_the_capture_is_the_culprit_at_the_users_line() -> None:
    view = ReportView(report_for("item_in_capture"))
    lines = story(view, -1, view.trace.graphs[0])
    assert lines[0].kind == BEGIN and lines[0].where.endswith("item_in_capture.py:13 in <module>")
    culprits = [line for line in lines if line.culprit]
    assert len(culprits) == 1
    assert culprits[0].what == "sync: item"
    assert culprits[0].where.endswith("item_in_capture.py:15 in <module>")
    assert lines[-1].kind == END and lines[-1].what == "capture ends: failed"
    offsets = [line.offset for line in lines if line.kind not in (OWN_TIME,)]
    assert offsets == sorted(offsets)  # in time order, begin to end


def test_an_unjoined_fork_is_named_as_such_and_is_the_culprit() -> None:
    view = ReportView(report_for("unjoined_side_stream"))
    graph = view.trace.graphs[0]
    links = capture_links(view.trace, graph)
    assert [(link.role, link.joined) for link in links] == [(FORK, False)]
    assert (links[0].waiting, links[0].waited_on) != (graph.stream, graph.stream)
    assert links[0].waited_on == graph.stream
    culprit = next(line for line in story(view, -1, graph) if line.culprit)
    assert "a fork into the capture, never joined back" in culprit.what
    assert culprit.where.endswith("unjoined_side_stream.py:14 in <module>")


def test_graphdoctors_own_time_is_told_apart() -> None:
    view = ReportView(report_for("launch_bound"))
    graph = view.trace.graphs[0]
    own, stretches = own_time(view.trace, graph)
    assert own == graph.own_ns > 0 and stretches >= 1
    lines = story(view, -1, graph)
    told = [line for line in lines if line.kind == OWN_TIME]
    assert len(told) == 1 and "not your code's time" in told[0].what
    # the end says what the driver listed in the graph: 200 layers' kernels in one chain
    assert lines[-1].what.startswith("capture ends: captured; the graph holds 400 nodes")


def test_a_run_of_allocations_from_one_line_is_one_step() -> None:
    view = ReportView(report_for("launch_bound"))
    graph = view.trace.graphs[0]
    data = view.trace.tables["allocs"].data
    inside = [t for t in data["t"] if graph.capture_start <= t <= graph.capture_end]
    steps = [line for line in story(view, -1, graph) if line.ref and line.ref.kind == "allocs"]
    assert len(inside) >= 2 and len(steps) == 1
    actions = [data["action"][i] for i, t in enumerate(data["t"])
               if graph.capture_start <= t <= graph.capture_end]
    allocated = actions.count("alloc")
    assert steps[0].what.startswith(f"{allocated} allocation{'s' if allocated > 1 else ''} of ")
    assert ("other allocator action" in steps[0].what) == (allocated < len(actions))


def op(t: int, name: str, stream: int, other: int) -> SimpleNamespace:
    return SimpleNamespace(t=t, op=name, stream=stream, other=other)


def test_forks_and_joins_through_streams_and_events() -> None:
    capture, side, event = 10, 20, 99
    ops = [op(1, "wait_stream", side, capture), op(2, "record", side, event),
           op(3, "wait_event", capture, event), op(4, "wait_stream", 30, 40)]
    links = stream_links(enumerate(ops), capture)
    assert [(link.row, link.role, link.joined) for link in links] == [
        (0, FORK, True), (2, JOIN, True), (3, WAIT, True)]
    assert unjoined_forks(stream_links(enumerate(ops[:1]), capture))[0].row == 0


def test_the_capture_view_fits_the_capture_and_draws_the_unjoined_fork() -> None:
    view = ReportView(report_for("unjoined_side_stream"))
    graph = view.trace.graphs[0]
    limits = capture_limits(view, -1, graph)
    assert limits.start < graph.capture_start < graph.capture_end < limits.end
    assert limits.span < 2 * (graph.capture_end - graph.capture_start)  # zoomed to fit
    lanes = capture_lanes(view, -1, graph)
    keys = [lane.key for lane in lanes]
    assert keys[0] == "phases" and f"stream:{graph.stream}" in keys
    assert not any(key.startswith(("memory", "gpu:")) for key in keys)
    width = 100
    rows = screen_rows(lanes, TimelineState(limits, limits.start), width)
    for overlay in capture_overlays(view, -1, graph, lanes):
        edges = [limits.start + limits.span * c // width for c in range(width + 1)]
        rows = overlay(rows, edges)
    drawn = {glyph for row in rows for glyph, style in row.cells if style.startswith(
        UNJOINED_LINK.style)}
    assert drawn & {*LINK_ENDS, UNJOINED_LINK.glyph}


def test_many_graphs_from_one_line_are_one_group_that_opens() -> None:
    view = ReportView(report_for("many_private_pools"))
    entries = group_rows(view, view.graph_rows)
    assert len(entries) == 1 and isinstance(entries[0], GraphGroup)
    group = entries[0]
    assert len(group.members) == len(view.trace.graphs) == 8
    assert group.where == "many_private_pools.py:10"
    assert shown_rows(entries, frozenset()) == [group]
    assert shown_rows(entries, frozenset({group.key})) == [group, *group.members]
    assert group_of(entries, -1, 5) is group
    assert group.replays == sum(row.replays.count for row in group.members)


def test_two_graphs_from_two_lines_stay_apart() -> None:
    view = ReportView(report_for("healthy_make_graphed_callables"))
    entries = group_rows(view, view.graph_rows)
    assert not any(isinstance(entry, GraphGroup) for entry in entries)


@pytest.mark.parametrize("name", scenario_params(scenario_names()))
def test_every_recorded_capture_tells_its_story(name: str) -> None:
    """Real libraries' captures (torchvision, timm, transformers) and every scenario's, on
    every rank: the story runs begin to end in time order and its timeline draws."""
    view = ReportView(report_for(name))
    for rank, rank_view in view.rank_views.items():
        for graph in rank_view.trace.graphs:
            lines = story(view, rank, graph)
            assert lines[0].kind == BEGIN and lines[-1].kind == END
            steps = [line.offset for line in lines if line.kind != OWN_TIME]
            assert steps == sorted(steps)
            limits = capture_limits(view, rank, graph)
            lanes = capture_lanes(view, rank, graph)
            rows = screen_rows(lanes, TimelineState(limits, limits.start), 80)
            edges = [limits.start + limits.span * c // 80 for c in range(81)]
            for overlay in capture_overlays(view, rank, graph, lanes):
                rows = overlay(rows, edges)
            assert rows and all(len(row.cells) == 80 for row in rows)
