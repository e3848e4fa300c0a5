"""Findings on the timeline: their markers, the keys from problem to problem, how a finding's
evidence is framed, and what the status line says of the recording's end."""

from __future__ import annotations

from pathlib import Path

from graphdoctor.diagnose.findings import ERROR, INFO
from graphdoctor.report.io import load
from graphdoctor.tui.events import EventRef
from graphdoctor.tui.palette import FINDING_MARKS
from graphdoctor.tui.report_view import ReportView
from graphdoctor.tui.screens.timeline import TimelineScreen
from graphdoctor.tui.timeline.findings import (
    FINDINGS,
    Problem,
    finding_span,
    next_problem,
    place_evidence,
)
from graphdoctor.tui.timeline.layout import Window, cells_text, column_edges, column_of
from graphdoctor.tui.timeline.view import framed, recording_note
from graphdoctor.tui.widgets.timeline import Timeline
from tests.reports import report_for
from tests.tui.helpers import app_for, settle, shown

WIDTH = 100
DISTRIBUTED = Path(__file__).parent / "reports" / "dist_extra_allreduce_in_capture.json.gz"


def index_of(view: ReportView, key: str) -> int:
    return next(i for i, lane in enumerate(view.lanes) if lane.key == key)


def around(start: int, end: int) -> Window:
    """[start, end] with a tenth of it either side."""
    margin = (end - start) // 10
    return Window(start - margin, end + margin)


def timeline_of(app: object) -> Timeline:
    return app.screen.query_one(Timeline)  # type: ignore[attr-defined, no-any-return]


# -- problems, pure ------------------------------------------------------------------------------
def test_each_piece_of_evidence_the_trace_holds_is_a_problem_in_time_order() -> None:
    view = ReportView(report_for("item_in_capture"))
    sync, failure = EventRef("syncs", 1), EventRef("exceptions", 0)
    sync_t = view.trace.tables["syncs"].data["t"][1]
    failure_t = view.trace.exceptions[0].t
    assert view.problems == [Problem(sync_t, sync_t, sync, 0, 1, 2),
                             Problem(failure_t, failure_t, failure, 0, 2, 2)]
    spans = {EventRef("syncs", 0): (5, 5), EventRef("syncs", 1): (1, 3)}
    placed = place_evidence([[EventRef("syncs", 0), None], [EventRef("syncs", 1)]], spans.get)
    assert [(p.start, p.finding, p.number, p.of) for p in placed] == [(1, 1, 1, 1),
                                                                       (5, 0, 1, 1)]


def test_next_problem_visits_each_event_once_and_stops_at_the_ends() -> None:
    a, b = EventRef("syncs", 0), EventRef("syncs", 1)
    problems = [Problem(10, 10, a, 0, 1, 2), Problem(10, 10, a, 1, 1, 1),  # a: two findings'
                Problem(10, 10, b, 0, 2, 2)]  # b: at the same moment as a
    assert next_problem(problems, 0, None, True) == problems[0]
    assert next_problem(problems, 10, a, True) == problems[2]  # a once, then b
    assert next_problem(problems, 10, b, True) is None
    assert next_problem(problems, 10, b, False) == problems[0]
    assert next_problem(problems, 10, None, True) is None  # strictly after the cursor
    assert next_problem(problems, 11, None, False) == problems[2]


def test_a_finding_s_span_is_its_evidence_on_one_rank() -> None:
    problems = [Problem(5, 7, EventRef("syncs", 0, 0), 0, 1, 3),
                Problem(9, 9, EventRef("syncs", 1, 0), 0, 2, 3),
                Problem(2, 2, EventRef("syncs", 0, 1), 0, 3, 3),
                Problem(1, 1, EventRef("syncs", 2, 0), 1, 1, 1)]
    assert finding_span(problems, 0, 0) == (5, 9)
    assert finding_span(problems, 0, 1) == (2, 2)
    assert finding_span(problems, 1, 1) is None


# -- the lane ----------------------------------------------------------------------------------
def test_the_findings_lane_is_under_the_phases_with_a_marker_per_piece_of_evidence() -> None:
    view = ReportView(report_for("item_in_capture"))
    assert [lane.label for lane in view.lanes][:3] == ["Phases", "Findings", "CPU main"]
    sync, failure = view.problems
    window = around(sync.start, failure.start)
    row = cells_text(view.lanes[1].rows(column_edges(window, WIDTH))[0][1])
    marks = {column_of(window, WIDTH, p.start) for p in view.problems}
    assert {i for i, glyph in enumerate(row) if glyph != " "} == marks
    assert set(row.replace(" ", "")) == {FINDING_MARKS[ERROR].glyph} == {"▲"}


def test_each_rank_has_its_findings_lane_under_its_phases() -> None:
    view = ReportView(load(DISTRIBUTED))
    for rank in (0, 1):
        lane = view.lanes[index_of(view, f"r{rank}/findings")]
        assert index_of(view, f"r{rank}/findings") == index_of(view, f"r{rank}/phases") + 1
        assert lane.label == f"r{rank} Findings"
        starts = sorted(t for series in lane.series for t in series.times)
        assert starts == [p.start for p in view.problems if p.ref.rank == rank] != []
    info = view.lanes[index_of(view, "r0/findings")].series  # GD401 is an info on rank 0
    assert any(series.mark == FINDING_MARKS[INFO] for series in info)


def test_a_marker_is_described_as_its_finding_with_the_evidence_s_details() -> None:
    view = ReportView(report_for("item_in_capture"))
    marker = view.describe(EventRef(FINDINGS, 0))
    sync = view.describe(EventRef("syncs", 1))
    assert marker.title.startswith("GD101 ✗ error: `.item()` at item_in_capture.py:15")
    assert marker.fields[0] == ("evidence", "sync: item (1 of 2)")
    assert marker.fields[1:] == sync.fields and marker.stack == sync.stack
    assert view.span_of(EventRef(FINDINGS, 1)) == view.span_of(EventRef("exceptions", 0))


# -- framing and the recording's end, pure -----------------------------------------------------
def test_framing_shows_the_whole_stretch_away_from_the_edges() -> None:
    limits = Window(0, 10_000_000)
    window = framed(limits, 4_000_000, 5_000_000, width=100)
    assert window == Window(3_950_000, 5_050_000)  # a twentieth either side
    columns = [column_of(window, 100, t) for t in (4_000_000, 5_000_000)]
    assert columns[0] >= 3 and columns[1] <= 96
    narrow = framed(limits, 4_000_000, 5_000_000, width=40)  # three columns at least
    assert column_of(narrow, 40, 4_000_000) >= 3 and column_of(narrow, 40, 5_000_000) <= 36
    assert framed(limits, 100_000, 9_900_000, width=100) == limits  # wider than the run
    assert framed(limits, 9_000_000, 9_990_000, width=100).end == limits.end  # kept inside


def test_the_recording_s_end_is_explained_when_the_process_ran_longer() -> None:
    assert recording_note(3_090_000_000, 5_430_000_000) == (
        "recording ends at 3.09 s · the process ran 5.43 s (start-up and exit are not recorded)")
    assert recording_note(5_200_000_000, 5_430_000_000) == ""  # within 5%
    assert recording_note(3_090_000_000, 0) == ""  # no wall time recorded


# -- in the app --------------------------------------------------------------------------------
async def test_a_marker_selected_shows_its_finding_and_evidence() -> None:
    app = app_for(report_for("item_in_capture"))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("3", "j", "n")
        await settle(pilot)
        timeline = timeline_of(app)
        assert timeline.lanes[timeline.state.lane].key == FINDINGS
        assert timeline.state.selected == EventRef(FINDINGS, 0)
        text = shown(app, "#event-text")
        assert "GD101 ✗ error: `.item()`" in text and "sync: item (1 of 2)" in text
        assert "item_in_capture.py:15" in text  # the evidence's own stack
        await pilot.press("n")
        assert timeline.state.selected == EventRef(FINDINGS, 1)
        assert "(2 of 2)" in shown(app, "#event-text")
        await pilot.press("N", "escape", "left", "enter")  # the marker a column away
        assert timeline.state.selected == EventRef(FINDINGS, 0)
        await pilot.press("escape", "k")
        column = column_of(timeline.state.window, timeline.plot_width, app.view.problems[1].start)
        await pilot.click(Timeline, offset=(timeline.label_width + column, 2))  # under the axis
        assert timeline.lanes[timeline.state.lane].key == FINDINGS
        assert timeline.state.selected is not None and timeline.state.selected.kind == FINDINGS


async def test_p_and_shift_p_go_from_problem_to_problem_on_the_events_own_lanes() -> None:
    app = app_for(report_for("item_in_capture"))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("3")
        await settle(pilot)
        timeline = timeline_of(app)
        await pilot.press("plus", "plus")
        span = timeline.state.window.span
        await pilot.press("p")
        state = timeline.state
        sync = app.view.problems[0]
        assert state.selected == sync.ref and state.cursor == sync.start
        assert timeline.lanes[state.lane].key == "syncs"  # the event's lane, not the marker's
        assert state.window.span == span and state.window.contains(sync.start)  # zoom kept
        text = shown(app, "#event-text")
        assert text.startswith("evidence of GD101 `.item()` at item_in_capture.py:15")
        assert "(1 of 2)" in text and text.index("(1 of 2)") < text.index("sync: item")
        await pilot.press("p")
        assert timeline.state.selected == EventRef("exceptions", 0)
        assert timeline.lanes[timeline.state.lane].key == "cpu:0"
        assert "(2 of 2)" in shown(app, "#event-text")
        await pilot.press("p")  # no more: it stays
        assert timeline.state.selected == EventRef("exceptions", 0)
        await pilot.press("P")
        assert timeline.state.selected == sync.ref


async def test_p_from_the_whole_run_zooms_to_the_evidence_away_from_the_edge() -> None:
    """At the whole run's zoom the evidence would sit in the last column: p zooms to it with
    some of its phase around, as enter on a finding does."""
    app = app_for(report_for("item_in_capture"))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("3")
        await settle(pilot)
        timeline = timeline_of(app)
        assert timeline.state.window.span >= timeline.limits.span  # the whole run
        await pilot.press("p")
        state = timeline.state
        sync = app.view.problems[0]
        assert state.selected == sync.ref and state.window.span < timeline.limits.span
        column = state.cursor_column(timeline.plot_width)
        assert 0 < column < timeline.plot_width - 1


async def test_p_visits_every_rank_s_problems_in_time_order() -> None:
    app = app_for(load(DISTRIBUTED))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("3")
        await settle(pilot)
        timeline = timeline_of(app)
        visited = []
        for _ in app.view.problems:
            await pilot.press("p")
            state = timeline.state
            visited.append(state.selected)
            assert state.selected is not None
            assert timeline.lanes[state.lane].rank == state.selected.rank
        assert visited == [p.ref for p in app.view.problems]
        assert {ref.rank for ref in visited if ref is not None} == {0, 1}


async def test_a_finding_s_evidence_is_framed_whole_with_the_culprit_off_the_edges() -> None:
    for name in ("unjoined_side_stream", "item_in_capture"):
        app = app_for(report_for(name))
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("3")
            await settle(pilot)
            screen = app.screen
            assert isinstance(screen, TimelineScreen)
            culprit, failure = app.view.problems  # the fork (the sync) and the failure
            screen.reveal(culprit.ref, finding_span(app.view.problems, 0, culprit.ref.rank))
            await settle(pilot)
            timeline = timeline_of(app)
            state, width = timeline.state, timeline.plot_width
            assert state.selected == culprit.ref
            columns = [column_of(state.window, width, p.start) for p in (culprit, failure)]
            assert all(2 <= column < width - 2 for column in columns), (name, columns)
            assert state.window.span < (failure.start - culprit.start) * 1.2


async def test_the_footer_shows_the_keys_needed_first_in_80_columns() -> None:
    app = app_for(report_for("item_in_capture"))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("3")
        await settle(pilot)
        keys = list(app.screen.query("FooterKey"))  # Textual does not export the class
        palette = next(key for key in keys if key.has_class("-command-palette"))
        visible = {getattr(key, "action") for key in keys  # noqa: B009
                   if key is not palette and key.region.right <= palette.region.x}
        # 0 (the whole run) is in the one-line hint: the footer keeps q Quit at 80 columns
        assert {"zoom(True)", "zoom(False)", "jump(True)", "jump(False)", "problem(True)",
                "problem(False)", "select_here", "help", "quit"} <= visible


async def test_the_status_line_says_the_recording_ends_before_the_process_did() -> None:
    app = app_for(report_for("item_in_capture"))
    async with app.run_test(size=(160, 40)) as pilot:  # narrower, it is cut (the hint has it)
        await pilot.press("3")
        await settle(pilot)
        note = recording_note(app.view.run_end, app.view.trace.status.wall_ns)
        assert note.startswith("recording ends at 4.80 s · the process ran 5.54 s")
        assert note in " ".join(shown(app, "#timeline-status", 160).split())
        await pilot.press("plus")  # the window no longer reaches the end
        assert "recording ends" not in shown(app, "#timeline-status")
