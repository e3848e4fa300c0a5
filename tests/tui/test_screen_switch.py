"""Switching screens: each screen is built on its first visit and kept, as it was left, for
the next; a screen shown again does not restyle the whole app."""

from __future__ import annotations

import pytest
from textual.app import App
from textual.pilot import Pilot

from graphdoctor.tui.app import SCREENS
from graphdoctor.tui.events import EventRef
from graphdoctor.tui.navigation import ShowEvent
from graphdoctor.tui.widgets.timeline import Timeline
from tests.tui.helpers import demo_app, settle, shown


async def test_the_timeline_is_the_same_screen_on_every_visit_and_keeps_its_state() -> None:
    app = demo_app("launch_bound")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("3")
        await settle(pilot)
        await pilot.press("plus", "plus", "right", "right", "down", "n")
        await settle(pilot)
        screen, timeline = app.screen, app.screen.query_one(Timeline)
        left, details = timeline.state, shown(app, "#event-text")
        for key in ("1", "2", "4", "5", "3"):
            await pilot.press(key)
            await settle(pilot)
        assert app.screen is screen and app.screen.query_one(Timeline) is timeline
        assert timeline.state == left and left.selected is not None
        assert left.window.span < timeline.limits.span  # still zoomed in
        assert shown(app, "#event-text") == details


async def test_a_jump_to_an_event_moves_the_kept_timeline() -> None:
    """The state is kept unless a jump asks to show something else."""
    app = demo_app("launch_bound")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("3", "end")
        await settle(pilot)
        screen = app.screen
        target = nth_event(screen.query_one(Timeline), 0, 1)
        assert target is not None and screen.query_one(Timeline).state.selected != target
        await pilot.press("1")
        app.post_message(ShowEvent(target))
        await settle(pilot)
        assert app.screen is screen and screen.query_one(Timeline).state.selected == target


async def test_a_screen_shown_again_does_not_restyle_the_app(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Textual restyles every widget of the app when it switches to a screen whose styles
    it takes for stale: the screen shown last for the first time was, on its next visit."""
    restyled: list[str] = []
    refresh_css = App.refresh_css

    def noted(self: App[None], animate: bool = True) -> None:
        restyled.append(self.current_mode)
        refresh_css(self, animate)

    monkeypatch.setattr(App, "refresh_css", noted)
    app = demo_app("launch_bound")
    async with app.run_test(size=(100, 30)) as pilot:
        await visit_every_screen(pilot)
        assert restyled  # first visits do restyle: each screen adds its styles
        restyled.clear()
        await visit_every_screen(pilot)
        await visit_every_screen(pilot)
    assert restyled == []


async def visit_every_screen(pilot: Pilot[None]) -> None:
    for number in [*range(2, len(SCREENS) + 1), 1]:
        await pilot.press(str(number))
        await settle(pilot)


def nth_event(timeline: Timeline, lane: int, n: int) -> EventRef | None:
    """The ``n``th event from the run's start on ``lane``, as n after n would reach it."""
    t, event = timeline.limits.start, None
    for _ in range(n):
        event = timeline.lanes[lane].next_event(t)
        if event is None:
            return None
        t = event.time
    return event.ref if event is not None else None

