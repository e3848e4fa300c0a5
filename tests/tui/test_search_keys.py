"""Keys that reach the search palette faster than it can close: a fast typist's second
Enter arrives while the palette is still on screen."""

from __future__ import annotations

import pytest
from textual import events
from textual.command import CommandPalette

from graphdoctor.tui.screens.findings import FindingsScreen
from tests.tui.helpers import demo_app, settle


@pytest.mark.parametrize("keys", [("enter", "enter"), ("enter", "enter", "enter")])
async def test_keys_pressed_while_the_search_closes_do_not_crash_the_viewer(
        keys: tuple[str, ...]) -> None:
    app = demo_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("slash", *"GD101")
        await settle(pilot)
        # Posted together, as a terminal delivers keys typed in quick succession
        # (Pilot.press waits for each key to be handled before sending the next).
        for key in keys:
            app.post_message(events.Key(key, "\r" if key == "enter" else None))
        await settle(pilot)
        assert app.return_code is None, app.crash_summary()
        assert isinstance(app.screen, FindingsScreen)
        assert not any(isinstance(screen, CommandPalette) for screen in app.screen_stack)
