"""Defects found by trying every screen in a terminal, each checked as the screen shows it
(Pilot): the memory lane's scale, the GPU lanes' scale and their staying drawn when zoomed
in, and one name per stream."""

from __future__ import annotations

from graphdoctor.tui.widgets.timeline import Timeline
from tests.tui.helpers import demo_app, screen_text, settle, shown


def rows_labelled(text: str, label: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(label)]


async def test_the_memory_lane_says_what_it_plots_and_where_zero_is() -> None:
    app = demo_app("item_in_capture")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("3")
        await settle(pilot)
        text = screen_text(app)
        assert rows_labelled(text, "allocated") and rows_labelled(text, "0 B")
        memory = next(lane for lane in app.screen.query_one(Timeline).lanes
                      if lane.key == "memory")
        labels = [line[:13].strip() for line in text.splitlines()]
        top = labels.index("allocated") - (memory.height - 1) // 2
        assert labels[top].endswith("KiB") and labels[top + memory.height - 1] == "0 B"


async def test_the_gpu_lane_has_a_scale_and_stays_drawn_when_zoomed_in() -> None:
    app = demo_app("launch_bound")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("3")
        await settle(pilot)
        timeline = app.screen.query_one(Timeline)
        gpu = next(i for i, lane in enumerate(timeline.lanes) if lane.key.startswith("gpu:"))
        await pilot.press(*["j"] * gpu, "end", *["plus"] * 14)  # under a ms at the end
        await settle(pilot)
        window = timeline.state.window
        readings = app.view.trace.tables["gpu_samples"].data["t"]
        assert window.span < 1_000_000 and not any(map(window.contains, readings))
        text = screen_text(app)
        rows = rows_labelled(text, "GPU0")
        assert rows and "100%" in rows[0]
        below = text.splitlines()[text.splitlines().index(rows[0]) + timeline.lanes[gpu].height - 1]
        assert below.startswith("0%")
        plots = [line[timeline.label_width:] for line in (rows[0], below)]
        assert any(char.strip() for plot in plots for char in plot)  # not blank


async def test_one_stream_has_one_name_in_the_finding_the_lane_and_the_details() -> None:
    app = demo_app("unjoined_side_stream")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("2", "enter")
        await settle(pilot)
        details = shown(app, "#event-text")
        timeline = app.screen.query_one(Timeline)
        lane = timeline.lanes[timeline.state.lane].label
        assert lane == "s1 side"
        assert "stream wait_stream on s1 (0x" in details
        name = details.split("stream wait_stream on ", 1)[1].split(")", 1)[0] + ")"
        assert name.startswith("s1 (0x") and "Stream 0x" not in details
