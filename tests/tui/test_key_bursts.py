"""The viewer under bursts of keys, as a fast typist on a loaded host sends them: every key
the app and its screens bind, and the keys people press anyway (PageUp/PageDown, digits,
arrows, Esc, Enter, letters typed into a table's filter), posted in runs at full speed while
each message takes a little longer to handle than it would on an idle machine. Thousands of
keys over several reports, zero exceptions; and the two crashes found that way, each as its
own test."""

from __future__ import annotations

import asyncio
import os
import random
import time
from collections.abc import Iterator

import pytest
from textual import events
from textual.binding import Binding
from textual.command import CommandList
from textual.message_pump import MessagePump
from textual.widgets.option_list import Option

from graphdoctor.tui.app import SCREENS, GraphDoctorApp
from graphdoctor.tui.screens.graph_story import GraphStoryScreen
from graphdoctor.tui.screens.help import HelpScreen
from graphdoctor.tui.search import SearchPalette
from graphdoctor.tui.widgets.table_filter import FilterInput, TableFilter
from graphdoctor.tui.widgets.timeline import Timeline
from tests.reports import report_for
from tests.tui.helpers import app_for, demo_app, settle

pytestmark = pytest.mark.slow  # the second test command (README: Tests)

PRESSED_ANYWAY = ("pageup", "pagedown", "up", "down", "left", "right", "home", "end", "tab",
                  "shift+tab", "escape", "enter", "backspace", "slash", "z", "1", "9", "0",
                  "i", "u", "space",  # typed into a table's filter
                  "n", "N", "ctrl+f")  # bound already: pressed more often, a search's hits
CHARACTERS = {"slash": "/", "question_mark": "?", "plus": "+", "minus": "-",
              "left_square_bracket": "[", "right_square_bracket": "]", "enter": "\r",
              "greater_than_sign": ">", "less_than_sign": "<", "escape": "\x1b", "tab": "\t",
              "backspace": "\x7f", "space": " "}
REPORTS = ("launch_bound", "real_tv_resnet_train_capture", "dist_extra_allreduce_in_capture")
SLOWER_BY_S = 0.0003  # added to the handling of each message: a host busy with other work


def bound_keys() -> list[str]:
    """Every key a binding of the app, its screens or the timeline names, but quit."""
    owners = [GraphDoctorApp, *(entry.screen for entry in SCREENS), HelpScreen,
              GraphStoryScreen, SearchPalette, Timeline, TableFilter, FilterInput]
    keys = {key.strip() for owner in owners for binding in owner.BINDINGS
            if isinstance(binding, Binding) for key in binding.key.split(",")}
    return sorted(keys - {"q", "ctrl+q", "ctrl+c"}) + list(PRESSED_ANYWAY)


def key_event(key: str) -> events.Key:
    character = CHARACTERS.get(key, key if len(key) == 1 else None)
    return events.Key(key, character)


SEEDS_ENV = "GRAPHDOCTOR_BURST_SEEDS"  # more seeds for a longer hunt (4 by default)


def bursts(seed: int, keys: list[str], total: int) -> Iterator[list[str]]:
    """``total`` keys in runs of 1 to 12, chosen by ``seed``."""
    chooser = random.Random(seed)
    sent = 0
    while sent < total:
        run = [chooser.choice(keys) for _ in range(chooser.randint(1, 12))]
        sent += len(run)
        yield run


@pytest.fixture
def loaded_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each message handled a little later, the event loop held as other work would hold it."""
    dispatch = MessagePump._dispatch_message

    async def slowed(self: MessagePump, message: object) -> None:
        time.sleep(SLOWER_BY_S)
        await dispatch(self, message)  # type: ignore[arg-type]

    monkeypatch.setattr(MessagePump, "_dispatch_message", slowed)


@pytest.mark.usefixtures("loaded_host")
@pytest.mark.parametrize("name", REPORTS)
async def test_bursts_of_any_key_never_crash_the_viewer(name: str) -> None:
    keys, seen = bound_keys(), 0
    for seed in range(int(os.environ.get(SEEDS_ENV, "4"))):
        app = app_for(report_for(name), name)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot)
            for run in bursts(seed, keys, 250):
                for key in run:
                    app.post_message(key_event(key))
                seen += len(run)
                await asyncio.sleep(random.Random(seed + seen).choice([0, 0, 0.001, 0.005]))
            await settle(pilot)  # every key handled before the app is closed
            await settle(pilot)
        assert app.return_code is None, (name, seed, app.crash_summary())
    assert seen >= 1000


@pytest.mark.parametrize("keys", [("q", "2"), ("3", "q", "4"), ("q", "slash", "z"),
                                  ("q", "question_mark", "enter"), ("3", "3", "q", "1", "5")])
async def test_keys_typed_after_quit_open_no_screen(keys: tuple[str, ...]) -> None:
    """``q`` then a screen's number, in one burst: that screen used to mount while the app
    was being torn down, and fail there (NoMatches on its widgets)."""
    app = demo_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        for key in keys:
            app.post_message(key_event(key))
        await pilot.pause(0.5)
    assert app.return_code == 0, app.crash_summary()


async def test_a_page_key_before_the_search_hits_are_laid_out_is_dropped() -> None:
    """PageDown reaching the search while its hits have arrived but are not laid out yet:
    Textual's option list turns the page by lines it has not made (KeyError). Made here by
    giving the list its hits while it has no room."""
    app = demo_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("slash")
        await settle(pilot)
        hits = app.screen.query_one(CommandList)
        hits.display = False
        await pilot.pause()
        hits.clear_options()
        hits.add_options([Option("one"), Option("two")])
        hits.highlighted = 0
        await pilot.press("pagedown", "pageup")
        assert isinstance(app.screen, SearchPalette)
    assert app.return_code is None, app.crash_summary()


@pytest.mark.parametrize("opened", ["search", "help"])
async def test_closing_a_box_left_under_another_screen_pops_nothing(opened: str) -> None:
    """A number key typed as the search (or help) opened switches to another screen, the
    box left on the stack of the screen it opened over; closing it then (Enter on a hit,
    Esc) used to pop the new screen's own (ScreenStackError: Can't pop screen)."""
    app = demo_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        opened_over = app.current_mode
        other = next(entry.name for entry in SCREENS if entry.name != opened_over)
        await pilot.press("slash" if opened == "search" else "question_mark")
        await settle(pilot)
        box = app.screen
        assert isinstance(box, SearchPalette if opened == "search" else HelpScreen)
        app.switch_mode(other)
        await settle(pilot)
        box.dismiss()
        await settle(pilot)
        assert app.current_mode == other and len(app.screen_stack) == 1
        app.switch_mode(opened_over)  # back where it was opened: still there, and closes
        await settle(pilot)
        assert app.screen is box
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is not box
    assert app.return_code is None, app.crash_summary()


@pytest.mark.parametrize("message", ["finding", "graph", "event", "screen"])
async def test_a_message_queued_while_the_app_closes_opens_nothing(message: str) -> None:
    """The key-burst crash of 'No known mode findings': a key's message handled after
    Textual had cleared the app's modes for its shutdown (the harness's, not q's)."""
    from graphdoctor.tui.events import EventRef
    from graphdoctor.tui.navigation import GoToScreen, ShowEvent, ShowFinding, ShowGraph

    app = demo_app("launch_bound")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        app._modes.clear()  # as Textual's _close_all leaves them
        posted = {"finding": ShowFinding(0), "graph": ShowGraph((-1, 0)),
                  "event": ShowEvent(EventRef("replays", 0)), "screen": GoToScreen("findings")}
        app.post_message(posted[message])
        await pilot.pause()
    assert app.return_code in (None, 0)
