"""Arrows flow between the parts of a screen stacked one after the other: down past the end of
one goes on to the next, up before the start of one back to the one before; at the first and
last part they stay."""

from __future__ import annotations

from textual.pilot import Pilot

from graphdoctor.tui.app import GraphDoctorApp
from graphdoctor.tui.screens.graph_story import GraphStoryScreen
from graphdoctor.tui.widgets.timeline import Timeline
from tests.reports import report_for
from tests.tui.helpers import app_for, settle

MOST_PRESSES = 60  # a pane's text is never this many lines past its height in these reports


def focused_id(app: GraphDoctorApp) -> str | None:
    return app.focused.id if app.focused is not None else None


async def press_until_focus_leaves(pilot: Pilot[None], key: str) -> str | None:
    """Press ``key`` until the focus moves on (or MOST_PRESSES times); where it went."""
    app = pilot.app
    assert isinstance(app, GraphDoctorApp)
    start = focused_id(app)
    for _ in range(MOST_PRESSES):
        await pilot.press(key)
        if focused_id(app) != start:
            break
    return focused_id(app)


async def test_findings_flow_from_the_list_to_the_explanation_and_its_evidence() -> None:
    app = app_for(report_for("dist_rank_capture_fails"))  # four findings
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("2")
        await settle(pilot)
        assert await press_until_focus_leaves(pilot, "up") == "findings-list"  # nothing above
        assert await press_until_focus_leaves(pilot, "down") == "finding-detail"
        assert await press_until_focus_leaves(pilot, "down") == "evidence"
        assert await press_until_focus_leaves(pilot, "up") == "finding-detail"
        assert await press_until_focus_leaves(pilot, "up") == "findings-list"
        assert app.screen.current == 3  # left at the last finding, where it was


async def test_graphs_and_allocations_flow_from_the_table_to_the_details_and_back() -> None:
    app = app_for(report_for("memory_growth_replays"))
    async with app.run_test(size=(120, 40)) as pilot:
        for screen, table, details in [("5", "graphs-table", "graph-detail"),
                                       ("4", "alloc-table", "alloc-detail")]:
            await pilot.press(screen)
            await settle(pilot)
            assert focused_id(app) == table
            assert await press_until_focus_leaves(pilot, "down") == details
            assert await press_until_focus_leaves(pilot, "up") == table


async def test_a_graphs_story_flows_from_its_steps_to_its_timeline_and_back() -> None:
    app = app_for(report_for("item_in_capture"))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("5", "enter")
        await settle(pilot)
        assert isinstance(app.screen, GraphStoryScreen) and focused_id(app) == "story"
        await pilot.press("up")  # the first step: the timeline is above
        assert focused_id(app) == "capture-timeline"
        timeline = app.screen.query_one(Timeline)
        assert await press_until_focus_leaves(pilot, "down") == "story"
        assert timeline.state.lane == len(timeline.lanes) - 1
