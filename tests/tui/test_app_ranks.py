"""The app on distributed runs' reports (two H200s), driven with Pilot: every screen opens,
ids do not collide across ranks, and every jump lands on the rank it names."""

from __future__ import annotations

import pytest
from textual.widgets import DataTable, OptionList

from graphdoctor.tui.app import GraphDoctorApp
from graphdoctor.tui.events import EventRef
from graphdoctor.tui.screens.findings import FindingsScreen
from graphdoctor.tui.screens.graphs import COLUMNS, GraphsScreen
from graphdoctor.tui.screens.timeline import TimelineScreen
from graphdoctor.tui.widgets.timeline import Timeline
from tests.reports import report_for
from tests.tui.helpers import app_for, plain, settle, shown

DISTRIBUTED = ["dist_healthy_capture", "dist_extra_allreduce_in_capture",
               "dist_rank_capture_fails"]
HUNG = "dist_extra_allreduce_in_capture"
FAILS = "dist_rank_capture_fails"


def options(app: GraphDoctorApp, selector: str) -> list[str]:
    found = app.screen.query_one(selector, OptionList)
    return [plain(found.get_option_at_index(i).prompt, 200)  # type: ignore[arg-type]
            for i in range(found.option_count)]


def table_rows(app: GraphDoctorApp, selector: str) -> list[list[str]]:
    table = app.screen.query_one(selector, DataTable)
    return [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]


def timeline(app: GraphDoctorApp) -> Timeline:
    return app.screen.query_one(Timeline)


@pytest.mark.parametrize("name", DISTRIBUTED)
async def test_every_screen_opens(name: str) -> None:
    app = app_for(report_for(name))
    async with app.run_test(size=(80, 24)) as pilot:
        for key in "23451":
            await pilot.press(key)
            await settle(pilot)
        await pilot.press("3", "n", "]", "n", "enter", "plus", "z", "[")
        await settle(pilot)
        assert app.is_running


async def test_the_summary_says_how_each_rank_ended_and_what_it_raised() -> None:
    app = app_for(report_for(FAILS))
    async with app.run_test(size=(120, 40)):
        outcome = " ".join(shown(app, "#outcome").split())
        assert "2 ranks on 1 host (vm: 0, 1) · nccl backend · world size 2" in outcome
        assert "rank 0 exited with code 1" in outcome and "rank 1 exited with code 1" in outcome
        rank1 = outcome[outcome.index("rank 1 exited"):]
        assert "raised AcceleratorError" in rank1 and "cudaErrorStreamCaptureUnsupported" in rank1
        assert "dist_rank_capture_fails.py:24" in rank1  # rank 1's line, from rank 1's trace
        verdicts = options(app, "#verdicts")
        assert [v.split()[2:4] for v in verdicts] == [["rank", "0:"], ["rank", "1:"]]
        assert "failed" in verdicts[1]
        assert all(" rank " in f for f in options(app, "#top-findings"))
        environment = shown(app, "#environment")
        assert "rank 0    on GPU 0" in environment and "rank 1    on GPU 1" in environment


async def test_a_ranks_verdict_opens_that_ranks_graph_or_why_it_failed() -> None:
    app = app_for(report_for(FAILS))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("down", "enter")  # rank 1's verdict: its graph 0 failed
        await settle(pilot)
        assert isinstance(app.screen, FindingsScreen)
        failed = app.view.findings[app.screen.current or 0]
        assert (failed.id, failed.rank) == ("GD101", 1)
        await pilot.press("1", "up", "enter")  # rank 0's verdict: unmeasured, so its graph
        await settle(pilot)
        assert isinstance(app.screen, GraphsScreen)
        table = app.screen.query_one("#graphs-table", DataTable)
        assert table.cursor_row == 0
        row = table_rows(app, "#graphs-table")[0]  # the rank, then COLUMNS
        assert [row[0], *(row[1 + COLUMNS.index(c)] for c in ("graph", "api", "status"))] == [
            "0", "0", "torch.cuda.graph", "captured"]
        await pilot.press("down")
        await settle(pilot)
        text = shown(app, "#graph-text")
        assert text.startswith("rank 1 · graph 0") and "because AcceleratorError" in text
        assert "GD403" in text and "GD402" not in text  # GD402 belongs to rank 0


async def test_graphs_of_every_rank_are_listed_and_open_on_their_ranks_lane() -> None:
    app = app_for(report_for(HUNG))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("5")
        await settle(pilot)
        rows = table_rows(app, "#graphs-table")
        assert [row[:2] for row in rows] == [["0", "0"], ["1", "0"]]  # rank, graph
        # each rank replayed 5 times, as its verdict says, rank 1's never timed (it hung)
        assert [row[1 + COLUMNS.index("replays")] for row in rows] == ["5", "5"]
        await pilot.press("down", "enter")
        await settle(pilot)
        state = timeline(app).state
        assert state.selected == EventRef("graphs", 0, 1)
        assert timeline(app).lanes[state.lane].label == "r1 s2 capture"


async def test_the_diverged_collective_opens_on_rank_1() -> None:
    app = app_for(report_for(HUNG))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("2")
        assert isinstance(app.screen, FindingsScreen)
        assert "GD402 rank 1: ranks diverge" in options(app, "#findings-list")[0]
        assert options(app, "#evidence")[0].startswith("rank 1 · all_reduce #4")
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, TimelineScreen)
        state = timeline(app).state
        assert state.selected == EventRef("collectives", 4, 1)
        assert timeline(app).lanes[state.lane].key == "r1/collectives"
        # on the job's axis: rank 1's own time moved by where its start lies on it
        t = app.view.trace_of(1).tables["collectives"].data["t"][4] + app.view.of(1).offset
        assert state.window.contains(t) and state.window.span < app.view.limits.span
        assert "captured in graph 0" in shown(app, "#event-text")
        status = shown(app, "#timeline-status")
        assert " capture " in status  # rank 1 was capturing, and on one time axis
        assert app.view.phase_at(t, 0) == "capture"  # so was rank 0, at the same moment


async def test_the_teardown_that_never_returned_opens_on_rank_0() -> None:
    app = app_for(report_for(HUNG))
    async with app.run_test(size=(120, 40)) as pilot:
        index = next(i for i, f in enumerate(app.view.findings) if f.name == "teardown-hang")
        await pilot.press("2", *["down"] * index, "enter")
        await settle(pilot)
        state = timeline(app).state
        assert state.selected == EventRef("teardown", 0, 0)
        assert timeline(app).lanes[state.lane].key == "r0/collectives"
        details = shown(app, "#event-text")
        assert "rank 0 · destroy_process_group()" in details and "never returned" in details


async def test_brackets_compare_a_lane_across_ranks() -> None:
    app = app_for(report_for(HUNG))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("3")
        lanes = timeline(app).lanes
        await pilot.press("j", "j", "j")  # past the phases, the findings and the CPU
        assert lanes[timeline(app).state.lane].key == "r0/collectives"
        await pilot.press("right_square_bracket")
        assert lanes[timeline(app).state.lane].key == "r1/collectives"
        assert "r1 Collectives" in shown(app, "#timeline-status")
        await pilot.press("left_square_bracket")
        assert lanes[timeline(app).state.lane].key == "r0/collectives"
        status = app.screen.status_text(timeline(app).state).plain  # type: ignore[attr-defined]
        assert status.endswith("ranks on their wall clocks")  # last: at 100 columns, cut


async def test_z_zooms_to_the_phase_of_the_lanes_rank() -> None:
    app = app_for(report_for(HUNG))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("3")
        lanes = timeline(app).lanes
        rank1 = next(i for i, lane in enumerate(lanes) if lane.key == "r1/phases")
        capture = next(p for p in app.view.trace_of(1).phases if p.phase == "capture")
        # from the cursor at 0 to the capture's start: rank 1's first phase starts later on
        # the job's axis (it started after rank 0), so it takes a step of its own
        later = app.view.of(1).offset > 0
        steps = app.view.trace_of(1).phases.index(capture) + later
        await pilot.press(*["j"] * rank1, *["n"] * steps)
        await pilot.press("z")
        window = timeline(app).state.window
        moved = app.view.of(1).offset
        assert window.start <= capture.start + moved and window.end >= capture.end + moved
        assert window.span < (capture.end - capture.start) * 1.2  # rank 1's, not rank 0's


async def test_allocations_name_their_rank_and_open_there() -> None:
    app = app_for(report_for(HUNG))  # both ranks captured, each into a pool of its own
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("4")
        await settle(pilot)
        assert [row[0] for row in table_rows(app, "#alloc-table")] == ["r0 capture", "r1 capture"]
        await pilot.press("o")
        await settle(pilot)
        assert [row[0] for row in table_rows(app, "#alloc-table")][:2] == ["r0 (1, 0)",
                                                                          "r1 (1, 0)"]
        assert "captured into it: graph 0" in shown(app, "#alloc-text")  # rank 0's graph
        await pilot.press("down")
        assert "captured into it: graph 0" in shown(app, "#alloc-text")  # rank 1's own
        await pilot.press("enter")
        await settle(pilot)
        selected = timeline(app).state.selected
        assert selected is not None and selected.kind == "allocs" and selected.rank == 1


async def test_search_finds_each_ranks_events() -> None:
    app = app_for(report_for(FAILS))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("slash", *"rank 1 synchronization item", "enter")
        await settle(pilot)
        selected = timeline(app).state.selected
        assert selected == EventRef("syncs", 1, 1)
        await pilot.press("slash", *"rank 1 graph 0", "enter")
        await settle(pilot)
        assert isinstance(app.screen, GraphsScreen)
        assert app.screen.query_one("#graphs-table", DataTable).cursor_row == 1


async def test_help_says_how_the_ranks_clocks_line_up() -> None:
    app = app_for(report_for(HUNG))
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.press("question_mark")
        text = " ".join(shown(app, "#help-text").split())
        assert "each rank's times count from its own start" in text
        assert "] Same lane, next rank" in text and "┅" in text


async def test_a_click_on_a_ranks_lane_selects_its_event_past_the_wider_labels() -> None:
    from graphdoctor.tui.timeline.layout import column_of

    app = app_for(report_for(HUNG))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("3")
        line = timeline(app)
        lane = next(i for i, each in enumerate(line.lanes) if each.key == "r1/collectives")
        row = 1 + line.lane_row_span(lane)[0]
        t = app.view.trace_of(1).tables["collectives"].data["t"][4]
        column = column_of(line.state.window, line.plot_width, t)
        await pilot.click(Timeline, offset=(15, row))  # on the label: the lane only
        assert line.state.lane == lane and line.state.selected is None
        await pilot.click(Timeline, offset=(16 + column, row))
        selected = line.state.selected
        assert selected is not None and selected.kind == "collectives" and selected.rank == 1
        assert selected.index in (3, 4)  # both were captured within that column
