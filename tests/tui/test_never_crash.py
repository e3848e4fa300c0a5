"""The viewer never crashes: not on its first frame under ``NO_COLOR`` (Textual's monochrome
filter read a segment drawn with no style), not on ctrl+p (Textual's own command palette,
whose PageUp in a list not laid out raised KeyError: graphdoctor's palette, its search,
opens instead), not on PageUp/PageDown in a list whose options were just
replaced; and bursts of those keys on every screen and box, with ``NO_COLOR=1`` or
``TERM=dumb`` set and the terminal resized mid-burst, end with the app still running."""

from __future__ import annotations

import asyncio
import random

import pytest
from textual.filter import Monochrome
from textual.pilot import Pilot
from textual.widgets.option_list import Option

from graphdoctor.tui.app import GraphDoctorApp
from graphdoctor.tui.search import SearchPalette
from graphdoctor.tui.widgets.flow import FlowingList
from tests.reports import report_for
from tests.tui.helpers import app_for, screen_text, settle
from tests.tui.test_key_bursts import key_event

SCREEN_KEYS = ("1", "2", "3", "4", "5")


@pytest.fixture
def no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")  # read, and taken out, as each app starts


async def test_no_color_draws_every_screen(no_color: None) -> None:
    """``NO_COLOR=1 graphdoctor view item_in_capture``: "the viewer crashed (AttributeError:
    'NoneType' object has no attribute 'color')" on its first frame."""
    app = app_for(report_for("item_in_capture"), "item_in_capture")
    async with app.run_test(size=(80, 24)) as pilot:
        assert any(isinstance(f, Monochrome) for f in app._filters)  # NO_COLOR took effect
        for key in (*SCREEN_KEYS, "question_mark"):
            await pilot.press(key)
            await settle(pilot)
            assert screen_text(app).strip()
    assert app.return_code is None, app.crash_summary()


async def test_ctrl_p_opens_graphdoctors_palette_the_search() -> None:
    app = app_for(report_for("launch_bound"), "launch_bound")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p")
        await settle(pilot)
        assert isinstance(app.screen, SearchPalette)
        await pilot.press("ctrl+p", "ctrl+f")  # open already: no second one over it
        await settle(pilot)
        assert sum(isinstance(s, SearchPalette) for s in app.screen_stack) == 1
        await pilot.press(*"replay phase", "enter")
        await settle(pilot)
        assert app.current_mode == "timeline" and not isinstance(app.screen, SearchPalette)
    assert app.return_code is None, app.crash_summary()


async def test_page_keys_on_a_list_whose_options_were_just_replaced() -> None:
    """PageUp reaching a list given new options it has not laid out yet (a group opened on
    the Summary, a live report's new findings): Textual turns the page by lines it has not
    made (KeyError). Made here by replacing the options while the list has no room."""
    app = app_for(report_for("launch_bound"), "launch_bound")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        verdicts = app.screen.query_one("#verdicts", FlowingList)
        verdicts.display = False
        await pilot.pause()
        verdicts.clear_options()
        verdicts.add_options([Option("one"), Option("two")])
        verdicts.highlighted = 1
        verdicts.focus()
        await pilot.press("pagedown", "pageup")
    assert app.return_code is None, app.crash_summary()


# -- bursts on every screen and box --------------------------------------------------------
BURST_KEYS = ("ctrl+p", "pageup", "pagedown", "pageup", "pagedown", "escape", "down", "up",
              "enter", "tab", "x", "ctrl+f", "p", "a", "question_mark", "home", "end")
OPENINGS = {  # each screen and box of the app, from the Summary
    "summary": (), "findings": ("2",), "timeline": ("3",), "allocations": ("4",),
    "graphs": ("5",), "graph story": ("5", "enter"), "help": ("question_mark",),
    "search": ("ctrl+p",), "search, nothing found": ("ctrl+p", *"zzzzqqq"),
}
ENVIRONMENTS = {"plain": {}, "NO_COLOR": {"NO_COLOR": "1"}, "TERM=dumb": {"TERM": "dumb"}}


async def calm(pilot: Pilot[None]) -> None:
    """Wait for the app's workers, a search cancelled by a key of the burst among them."""
    await asyncio.gather(*(worker.wait() for worker in pilot.app.workers),
                         return_exceptions=True)  # a cancelled one raises WorkerCancelled
    await pilot.pause()


async def burst_on(app: GraphDoctorApp, opening: tuple[str, ...], seed: int) -> None:
    chooser = random.Random(seed)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press(*opening)
        await calm(pilot)
        for run in range(6):
            for _ in range(chooser.randint(4, 12)):
                app.post_message(key_event(chooser.choice(BURST_KEYS)))
            if run == 3:  # a resize in the middle of a burst
                await pilot.resize_terminal(*chooser.choice([(80, 24), (200, 60), (60, 16)]))
            await asyncio.sleep(chooser.choice([0, 0.001, 0.005]))
        await calm(pilot)
        await calm(pilot)


@pytest.mark.slow
@pytest.mark.parametrize("environment", ENVIRONMENTS)
@pytest.mark.parametrize("where", OPENINGS)
async def test_bursts_with_page_keys_and_ctrl_p_on_every_screen_and_box(
        where: str, environment: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in ENVIRONMENTS[environment].items():
        monkeypatch.setenv(name, value)
    for seed, report in enumerate(("launch_bound", "dist4_tp_dp_capture")):
        app = app_for(report_for(report), report)
        await burst_on(app, OPENINGS[where], seed)
        assert app.return_code is None, (where, environment, report, app.crash_summary())


@pytest.mark.slow
async def test_the_burst_that_opened_textuals_palette(no_color: None) -> None:
    """The 24 keys after ``3`` on dist4_tp_dp_capture that ended in ``KeyError: 0`` in
    Textual's command palette, typed at once, with NO_COLOR set."""
    keys = ["3", "down", "tab", "L", "plus", "d", "up", "pageup", "shift+tab", "pagedown",
            "f", "n", "right", "home", "pageup", "N", "z", "right", "pagedown", "5", "pageup",
            "4", "ctrl+p", "p", "a", "pageup", "pagedown"]
    app = app_for(report_for("dist4_tp_dp_capture"), "dist4_tp_dp_capture")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        for key in keys:
            app.post_message(key_event(key))
        await calm(pilot)
        await calm(pilot)
        assert isinstance(app.screen, SearchPalette)  # ctrl+p: graphdoctor's, "pa" typed
    assert app.return_code is None, app.crash_summary()
