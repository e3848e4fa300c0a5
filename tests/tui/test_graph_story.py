"""The graph story screen, driven with Pilot on the GPU recordings: from the Graphs screen,
enter opens a graph's capture, step by step, on a timeline zoomed to fit it; its steps
select their events; the second tab puts eager beside replay; groups open and close."""

from __future__ import annotations

from textual.widgets import DataTable, OptionList, TabbedContent

from graphdoctor.trace.model import OWN
from graphdoctor.tui.events import EventRef
from graphdoctor.tui.rank_view import capture_window
from graphdoctor.tui.screens.graph_story import CULPRIT, GraphStoryScreen
from graphdoctor.tui.screens.graphs import GraphsScreen
from graphdoctor.tui.timeline.graph_groups import GraphGroupLane
from graphdoctor.tui.widgets.timeline import LEGEND_ROWS, Timeline
from tests.reports import report_for
from tests.tui.helpers import app_for, demo_app, plain, settle


def option_texts(screen: GraphStoryScreen) -> list[str]:
    story = screen.query_one("#story", OptionList)
    return [plain(story.get_option_at_index(i).prompt) for i in range(story.option_count)]


async def test_enter_on_a_failed_graph_tells_its_capture_and_finds_the_culprit() -> None:
    app = demo_app("item_in_capture")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("5")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, GraphStoryScreen)
        heading = plain(screen.heading())
        assert "graph 0 · torch.cuda.graph · failed" in heading
        assert "graphdoctor's own" in heading and f" {OWN} " in heading
        texts = option_texts(screen)
        culprit = next(i for i, text in enumerate(texts) if CULPRIT in text)
        assert "sync: item" in texts[culprit] and "item_in_capture.py:15" in texts[culprit]
        screen.query_one("#story", OptionList).highlighted = culprit
        await settle(pilot)
        timeline = screen.query_one("#capture-timeline", Timeline)
        assert timeline.state.selected == EventRef("syncs", 1)
        start, end = capture_window(screen.graph, app.view.run_end)
        assert timeline.limits.start <= start and end <= timeline.limits.end
        assert timeline.limits.span < 2 * (end - start)


async def test_the_second_tab_puts_eager_beside_replay_and_escape_goes_back() -> None:
    app = demo_app("launch_bound")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("5")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        assert app.screen.query_one(TabbedContent).active == "steps"
        await pilot.press("c")
        assert app.screen.query_one(TabbedContent).active == "capture"
        await pilot.press("escape")
        assert isinstance(app.screen, GraphsScreen)


async def test_t_on_the_graphs_screen_shows_the_capture_on_the_timeline() -> None:
    app = demo_app("launch_bound")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("5")
        await settle(pilot)
        await pilot.press("t")
        await settle(pilot)
        timeline = app.screen.query_one(Timeline)
        assert timeline.state.selected == EventRef("graphs", 0)


async def test_a_group_of_graphs_opens_to_list_them_and_each_opens_its_story() -> None:
    app = app_for(report_for("many_private_pools"))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("5")
        await settle(pilot)
        table = app.screen.query_one("#graphs-table", DataTable)
        assert table.row_count == 1
        assert str(table.get_row_at(0)[0]) == "▸ 8 graphs"
        await pilot.press("enter")
        assert table.row_count == 9 and str(table.get_row_at(0)[0]) == "▾ 8 graphs"
        await pilot.press("down", "down", "enter")
        await settle(pilot)
        assert isinstance(app.screen, GraphStoryScreen) and app.screen.graph.id == 1
        await pilot.press("escape", "up", "up", "enter")
        assert table.row_count == 1


async def test_the_timeline_has_a_lane_per_group_that_opens_with_x() -> None:
    app = app_for(report_for("many_private_pools"))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("3")
        await settle(pilot)
        timeline = app.screen.query_one(Timeline)
        index = next(i for i, lane in enumerate(timeline.lanes)
                     if isinstance(lane, GraphGroupLane))
        group = timeline.lanes[index]
        assert group.label == "8× many_private_pools.py:10" and group.height == 1
        for _ in range(index):
            await pilot.press("down")
        await pilot.press("x")
        assert group.height == 9
        assert timeline.virtual_size.height == 1 + sum(lane.height for lane in timeline.lanes) \
            + LEGEND_ROWS
        await pilot.press("x")
        assert group.height == 1
