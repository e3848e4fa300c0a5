"""Search finds what a timeline user looks for by name: every replay of a graph (n and N
step through all 1,000 of them, each shown on the GPU with its nodes open), the kernels a
graph holds, and the calls of a function graphdoctor followed."""

from __future__ import annotations

from graphdoctor.tui.events import EventRef
from graphdoctor.tui.search import search_items, trail_of
from graphdoctor.tui.timeline.node_lane import NodeLane
from graphdoctor.tui.widgets.timeline import Timeline
from tests.reports import report_for
from tests.tui.helpers import app_for, demo_app, settle


def texts(name: str) -> list[str]:
    return [item.text for item in search_items(demo_app(name).view)]


def test_each_graphs_replays_are_one_item_whose_hits_are_every_replay() -> None:
    app = demo_app("launch_bound")
    items = search_items(app.view)
    chosen = next(i for i, item in enumerate(items) if item.text.startswith("replay of graph 0"))
    trail = trail_of(items, chosen)
    assert trail.count == len(app.view.trace.tables["replays"]) == 1000
    assert trail.moved(999).message().ref == EventRef("replays", 999)  # type: ignore[attr-defined]


def test_kernels_and_functions_are_found_by_name() -> None:
    found = texts("launch_bound")
    assert any(t.startswith("kernel vectorized_elementwise_kernel<tanh_kernel_cuda> ×200 in "
                            "graph 0") for t in found)
    assert any(t.startswith("kernel nvjet_sm90_") for t in found)
    assert "step call (eager)" in found
    compiled = [item.text for item in search_items(app_for(report_for(
        "real_decode_eager_then_compiled")).view)]
    assert any(text.startswith("decode_step call (") for text in compiled), compiled


async def test_a_replay_found_by_search_opens_on_the_gpu_with_its_nodes() -> None:
    app = demo_app("launch_bound")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("slash", *"tanh", "enter")
        await settle(pilot)
        timeline = app.screen.query_one(Timeline)
        lane = timeline.lanes[timeline.state.lane]
        assert isinstance(lane, NodeLane) and timeline.state.selected == EventRef("replays", 0)
        start, end = lane.replays.times[0], lane.replays.ends[0]  # type: ignore[index]
        assert timeline.state.window.start < start < end < timeline.state.window.end
        assert (end - start) * 10 > timeline.state.window.span * 8
        await pilot.press("n")
        await settle(pilot)
        assert timeline.state.selected == EventRef("replays", 1)
        assert timeline.lanes[timeline.state.lane] is lane


async def test_esc_clears_a_hit_found_from_the_timeline_itself() -> None:
    """No jump led there (the search was made on the timeline): esc has no way back to go,
    and clears the hit's selection, as it clears any other."""
    app = demo_app("launch_bound")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("3")
        await settle(pilot)
        await pilot.press("slash", *"replay of", "enter")
        await settle(pilot)
        timeline = app.screen.query_one(Timeline)
        assert timeline.state.selected == EventRef("replays", 0) and app.way_back == ()
        await pilot.press("escape")
        await settle(pilot)
        assert timeline.state.selected is None and app.screen.query(Timeline)
