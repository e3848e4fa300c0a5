"""The timeline reaches any scale in a few keys: a typed time or range (``:``), the event
(``e``), a graph's capture (``c``), a replay and its nodes (``r``), ten times at once
(``<``, ``>``)."""

from __future__ import annotations

import pytest

from graphdoctor.tui.events import EventRef
from graphdoctor.tui.screens.timeline import TimelineScreen
from graphdoctor.tui.timeline.layout import Window, column_edges
from graphdoctor.tui.timeline.node_lane import CLOSED_STYLE, NodeLane
from graphdoctor.tui.timeline.targets import (
    CAPTURES,
    REPLAYS,
    Spans,
    TypedTimeError,
    parse_duration,
    spans,
    typed_window,
)
from graphdoctor.tui.widgets.timeline import Timeline
from tests.tui.helpers import demo_app, settle, shown

LIMITS = Window(0, 5_000_000_000)
WINDOW = Window(1_000_000_000, 2_000_000_000)
CURSOR = 1_500_000_000


@pytest.mark.parametrize(("typed", "ns"), [
    ("1.2s", 1_200_000_000), ("500us", 500_000), ("500 µs", 500_000), ("3.25ms", 3_250_000),
    ("120ns", 120), ("2", 2_000_000_000), (".5ms", 500_000),
])
def test_a_duration_reads_with_its_unit(typed: str, ns: int) -> None:
    assert parse_duration(typed)[0] == ns


@pytest.mark.parametrize(("typed", "window", "cursor"), [
    ("1.20s-1.21s", Window(1_200_000_000, 1_210_000_000), 1_200_000_000),
    ("1.20-1.21s", Window(1_200_000_000, 1_210_000_000), 1_200_000_000),  # the unit of the end
    ("1.2s..1200.5ms", Window(1_200_000_000, 1_200_500_000), 1_200_000_000),
    ("3ms to 4ms", Window(3_000_000, 4_000_000), 3_000_000),
    ("1.2s-+500us", Window(1_200_000_000, 1_200_500_000), 1_200_000_000),
    ("+500us", Window(CURSOR, CURSOR + 500_000), CURSOR),
    ("3s", Window(2_500_000_000, 3_500_000_000), 3_000_000_000),  # the same zoom, centred
    ("4.9s-9s", Window(4_900_000_000, 5_000_000_000), 4_900_000_000),  # the axis ends first
])
def test_a_typed_time_or_range_is_the_window_it_says(typed: str, window: Window,
                                                     cursor: int) -> None:
    assert typed_window(typed, CURSOR, WINDOW, LIMITS) == (window, cursor)


@pytest.mark.parametrize("typed", ["bogus", "1.2x", "2s-1s", "6s-7s", "+", "1s-"])
def test_what_is_no_time_says_how_to_write_one(typed: str) -> None:
    with pytest.raises(TypedTimeError):
        typed_window(typed, CURSOR, WINDOW, LIMITS)


def test_spans_step_to_the_one_at_the_cursor_then_the_next() -> None:
    found = Spans([10, 30, 50], [20, 40, 60], [2, 2, 3])
    assert found.step(15, Window(0, 100), forward=True) == 0  # inside, not framed: this one
    assert found.step(15, Window(9, 21), forward=True) == 1  # framed already: the next
    assert found.step(25, Window(0, 100), forward=True) == 1  # between: the next
    assert found.step(25, Window(0, 100), forward=False) == 0  # between: the one before
    assert found.step(55, Window(49, 61), forward=False) == 1
    assert found.step(55, Window(49, 61), forward=True) is None
    assert found.step(5, Window(0, 100), forward=False) is None


def test_spans_are_read_from_the_stream_lanes_of_the_rank() -> None:
    app = demo_app("launch_bound")
    lanes = app.view.lanes
    replays = spans(lanes, REPLAYS, -1)
    assert len(replays) == len(app.view.trace.tables["replays"])  # each, as the stream ran it
    assert replays.starts == sorted(replays.starts)
    assert all(lanes[lane].key.startswith("stream:") for lane in replays.lanes)
    captures = spans(lanes, CAPTURES, -1)
    assert len(captures) == len(app.view.trace.graphs)


async def test_r_frames_a_replay_so_its_nodes_open_and_steps_on() -> None:
    app = demo_app("launch_bound")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("3")
        await settle(pilot)
        timeline = app.screen.query_one(Timeline)
        await pilot.press("r")
        await settle(pilot)
        found = spans(timeline.lanes, REPLAYS, -1)
        first = timeline.state.window
        assert first.start < found.starts[0] < found.ends[0] < first.end
        assert (found.ends[0] - found.starts[0]) * 10 > first.span * 8  # most of the screen
        lane = next(lane for lane in timeline.lanes if isinstance(lane, NodeLane))
        cells = lane.rows(column_edges(first, timeline.plot_width))[0][1]
        assert {style for _, style in cells} - {"", CLOSED_STYLE}  # opened into its kernels
        assert lane.describe(found.starts[0]).startswith("graph 0 node 0/400")
        await pilot.press("r")
        await settle(pilot)
        assert timeline.state.window.start < found.starts[1] < timeline.state.window.end
        assert timeline.state.cursor == found.starts[1]
        await pilot.press("R")
        await settle(pilot)
        assert timeline.state.window == first


async def test_c_frames_a_capture_and_its_lane() -> None:
    app = demo_app("launch_bound")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("3", "c")
        await settle(pilot)
        timeline = app.screen.query_one(Timeline)
        graph = app.view.trace.graphs[0]
        assert timeline.state.window.start < graph.capture_start
        assert graph.capture_end < timeline.state.window.end
        assert timeline.state.window.span < (graph.capture_end - graph.capture_start) * 2
        assert "capture" in timeline.lanes[timeline.state.lane].label


async def test_colon_shows_a_typed_range_and_e_the_event() -> None:
    app = demo_app("item_in_capture")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("3", "colon", *"1.2s-1.21s", "enter")
        await settle(pilot)
        timeline = app.screen.query_one(Timeline)
        assert timeline.state.window == Window(1_200_000_000, 1_210_000_000)
        await pilot.press("colon", *"bogus", "enter")  # said, and nothing moves
        await settle(pilot)
        assert timeline.state.window == Window(1_200_000_000, 1_210_000_000)
        await pilot.press("2", "enter")  # a finding's evidence, selected on the timeline
        await settle(pilot)
        ref = timeline.state.selected
        assert ref is not None
        await pilot.press("e")
        await settle(pilot)
        start, end = app.view.span_of(ref)  # type: ignore[misc]
        assert timeline.state.window.start <= start and end <= timeline.state.window.end
        assert timeline.state.window.span < 1_000_000  # an instant, seen to the microsecond


async def test_angle_brackets_zoom_ten_times_at_once() -> None:
    app = demo_app("launch_bound")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("3")
        await settle(pilot)
        timeline = app.screen.query_one(Timeline)
        whole = timeline.state.window.span
        await pilot.press("greater_than_sign", "greater_than_sign")
        await settle(pilot)
        assert timeline.state.window.span == pytest.approx(whole / 100, rel=0.01)
        await pilot.press("less_than_sign")
        await settle(pilot)
        assert timeline.state.window.span == pytest.approx(whole / 10, rel=0.01)


def test_the_help_lists_the_zoom_keys() -> None:
    keys = dict(TimelineScreen.key_help())
    assert {":", "e", "c", "C", "r", "R", ">", "<"} <= set(keys)


async def test_a_replay_on_the_gpu_says_when_its_launch_queued_it() -> None:
    app = demo_app("launch_bound")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("3", "r", "r", "r", "enter")
        await settle(pilot)
        timeline = app.screen.query_one(Timeline)
        assert timeline.state.selected == EventRef("replays", 2)
        text = " ".join(shown(app, "#event-text", 120).split())
        launched = app.view.trace.tables["replays"][2].t
        assert f"launched at {launched / 1e9:.6f} s (replay() on the CPU lane)" in text
        assert "on the GPU from 11.693010 s, 928 µs after its launch" in text
