"""A job of 64 ranks (the two-node recording repeated 16 times, each copy's process groups
its own, only rank 39 departing as the recorded rank 3 did, on eight hosts) in the app and
the text report: both open on the rank that differs, and fold the 63 that agree into one
line. How long it takes to open is measured in
bench/tui_ranks.py."""

from __future__ import annotations

import functools

from graphdoctor.report.document import Report
from graphdoctor.report.render.text import render_text
from graphdoctor.tui.screens.findings import FindingsScreen
from graphdoctor.tui.screens.timeline import TimelineScreen
from tests.report.jobs import job_of_64, many_ranks
from tests.tui.helpers import app_for, screen_text, settle

DEPARTING = 39


@functools.cache
def job() -> Report:
    return many_ranks(64, DEPARTING)


async def test_the_summary_opens_on_the_rank_that_differs() -> None:
    app = app_for(job(), "64 ranks")
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        text = screen_text(app)
        assert "64 ranks on 8 hosts" in text
        assert text.index(f"rank {DEPARTING}  ") < text.index("0-38, 40-63: exited with code 0")
        assert text.count("exited with code 0 ·") == 1  # the 63 that agree: one row
        assert "rank 5 " not in text and "ranks 1-38, 40-63 not shown" in text


async def test_every_screen_of_the_job_opens_and_the_timeline_holds_every_rank() -> None:
    app = app_for(job(), "64 ranks")
    async with app.run_test(size=(160, 50)) as pilot:
        for key in "23456":
            await pilot.press(key)
            await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        assert isinstance(app.screen, TimelineScreen)
        assert {lane.rank for lane in app.view.lanes} == set(range(64))
        await pilot.press("2")
        await settle(pilot)
        assert isinstance(app.screen, FindingsScreen)
        assert f"GD402 rank {DEPARTING}: ranks diverge" in screen_text(app)


def test_the_text_report_lists_each_group_of_ranks_once() -> None:
    text = render_text(job(), width=100)
    ranks = text.index("\nRanks: 64 ranks on 8 hosts")
    assert text.index(f"rank {DEPARTING} ", ranks) < text.index("ranks 0-38, 40-63", ranks)
    assert "ranks 1-38, 40-63 not shown" in text
    assert text.count("rank 5: ") == 0 and len(text.splitlines()) < 90



async def test_a_finding_alike_on_64_ranks_is_one_row_naming_them() -> None:
    app = app_for(job_of_64(), "64 ranks")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        summary = screen_text(app)
        assert "GD101 ranks 0-63: barrier() is not permitted" in summary
        assert "ranks 0-63: graph 0 (torch.cuda.graph" in summary
        await pilot.press("2")
        await settle(pilot)
        listed = screen_text(app)
        assert listed.count("GD101 rank") == 1 and "Findings (2)" in listed
        assert "sync-in-capture  (failed · ranks 0-63)" in listed
        await pilot.press("enter")  # its evidence on the timeline: rank 0's first
        await settle(pilot)
        assert isinstance(app.screen, TimelineScreen)
        assert len(app.view.evidence(app.view.findings[0])) == 64
