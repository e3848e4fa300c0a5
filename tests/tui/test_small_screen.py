"""80x24 is a first-class size: every screen's footer keeps q Quit, and the timeline's
lanes get the rows the details do not need."""

from __future__ import annotations

import pytest

from graphdoctor.tui.app import GraphDoctorApp
from tests.reports import report_for
from tests.tui.helpers import app_for, screen_text, settle

SCREENS = ("1", "2", "3", "4", "5")


@pytest.mark.parametrize("scenario", ["launch_bound", "dist_extra_allreduce_in_capture"])
async def test_every_screens_footer_keeps_quit_at_80_columns(scenario: str) -> None:
    app = app_for(report_for(scenario))
    async with app.run_test(size=(80, 24)) as pilot:
        for key in SCREENS:
            await pilot.press(key)
            await settle(pilot)
            footer = screen_text(app).splitlines()[-1]
            assert "q Quit" in footer, (key, footer)


def test_a_wrapped_line_keeps_its_indent() -> None:
    from rich.text import Text

    from graphdoctor.tui.rendering import hanging
    from tests.tui.helpers import plain

    text = Text("  200× vectorized_elementwise_kernel tanh\n• info GD211 one chain of kernels")
    lines = plain(hanging(text, ("• info",)), width=24).splitlines()
    assert lines[0].startswith("  200×") and lines[1].startswith("  ") and lines[1].strip()
    badge = next(i for i, line in enumerate(lines) if line.startswith("• info"))
    assert lines[badge + 1].startswith(" " * len("• info "))


RANKS_REPORT = "tests/tui/reports/dist_extra_allreduce_in_capture.json.gz"


def ranks_app() -> GraphDoctorApp:
    from graphdoctor.report.io import load

    return GraphDoctorApp(load(RANKS_REPORT), "ranks")


@pytest.mark.parametrize("scenario", ["ranks", "dist4_subgroup_diverge", "item_in_capture",
                                      "real_tv_compile_batch_sizes", "hang_in_gpu_sync"])
async def test_every_summary_opens_on_its_headline(scenario: str) -> None:
    """The outcome (how the run ended: the job's, for many ranks) is the first thing shown,
    however tall it is; up from the first verdict, and home there, come back to it."""
    app = ranks_app() if scenario == "ranks" else app_for(report_for(scenario))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        headline = screen_text(app).splitlines()[2]
        assert headline.startswith(" ✗ ") or headline.startswith(" ✓ "), headline
        assert app.focused is not None and app.focused.id == "verdicts"
        await pilot.press("down", "down", "down", "down")
        await settle(pilot)
        await pilot.press("up", "up", "up", "up", "up")
        await settle(pilot)
        assert screen_text(app).splitlines()[2] == headline
        await pilot.press("down", "home")
        await settle(pilot)
        assert screen_text(app).splitlines()[2] == headline


@pytest.mark.parametrize("tab", ["c", "e"])
async def test_the_graph_screens_footer_keeps_quit(tab: str) -> None:
    app = app_for(report_for("launch_bound"))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("5", "enter", tab)
        await settle(pilot)
        assert screen_text(app).splitlines()[-1].rstrip().endswith("q Quit   ▏^p palette")


async def test_the_status_line_is_cut_after_a_word() -> None:
    app = ranks_app()
    async with app.run_test(size=(80, 24)) as pilot:
        for keys in (["3"], ["plus"] * 12, ["j", "j"]):
            await pilot.press(*keys)
            await settle(pilot)
            status = screen_text(app).splitlines()[-3].rstrip()
            assert status.endswith("…") and status[-2] != " " and len(status) <= 80, status
            words = status[:-1].split()
            assert words[-1] in app.screen.status_text(  # type: ignore[attr-defined]
                app.screen.timeline.state).plain.split()  # type: ignore[attr-defined]
