"""The timeline after a resize: the status line's per-column figure and the lane names."""

from __future__ import annotations

import re

from graphdoctor.tui.widgets.timeline import Timeline
from tests.reports import report_for
from tests.tui.helpers import app_for, settle, shown

PER_COLUMN = re.compile(r"\(([^,]+), ([^)]+)/col\)")


async def test_the_per_column_figure_follows_a_resize() -> None:
    app = app_for(report_for("launch_bound"))
    async with app.run_test(size=(200, 40)) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        wide = PER_COLUMN.search(shown(app, "#timeline-status"))
        await pilot.resize_terminal(80, 24)
        await settle(pilot)
        narrow = PER_COLUMN.search(shown(app, "#timeline-status"))
        assert wide and narrow and wide[1] == narrow[1]  # the same window...
        assert wide[2] != narrow[2]  # ...over fewer columns: each covers more


async def test_lane_names_get_room_on_a_wide_screen() -> None:
    app = app_for(report_for("real_tv_compile_batch_sizes"))  # a lane per group of graphs
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        timeline = app.screen.query_one(Timeline)
        narrow = timeline.label_width
        await pilot.resize_terminal(200, 50)
        await settle(pilot)
        longest = max(len(lane.label) for lane in timeline.lanes)
        assert narrow == 13 and timeline.label_width == min(longest + 1, 13 + 12) > narrow


async def test_the_keys_hint_folds_to_one_line_on_a_short_screen() -> None:
    from graphdoctor.tui.screens.timeline import HINT, SHORT_HINT

    app = app_for(report_for("launch_bound"))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        short = shown(app, "#event-text")
        assert " ".join(short.split()) == SHORT_HINT
        timeline = app.screen.query_one(Timeline)
        lanes = sum(lane.height for lane in timeline.lanes)
        assert timeline.size.height >= lanes + 2  # axis, every lane and the legend
        await pilot.resize_terminal(120, 50)
        await settle(pilot)
        assert HINT.split(" · ")[3] in " ".join(shown(app, "#event-text").split())
