"""Switching screens: each screen is built on its first visit and kept, as it was left, for
the next; a screen shown again does not restyle the whole app; and a burst of keys on the
timeline writes its details once, for the event the burst ended on."""

from __future__ import annotations

from dataclasses import replace

import pytest
from textual import events
from textual.app import App
from textual.pilot import Pilot

from graphdoctor.tui.app import SCREENS, GraphDoctorApp
from graphdoctor.tui.events import EventRef
from graphdoctor.tui.navigation import ShowEvent
from graphdoctor.tui.screens.timeline import TimelineScreen
from graphdoctor.tui.widgets.timeline import Timeline
from tests.tui.helpers import demo_app, plain, settle, shown

BURST = 12


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


async def test_a_burst_of_keys_describes_the_event_it_ended_on_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    app = demo_app("launch_bound")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("3")
        await settle(pilot)
        timeline = app.screen.query_one(Timeline)
        lane = next(lane for lane in range(len(timeline.lanes))
                    if nth_event(timeline, lane, BURST) is not None)
        timeline.state = replace(timeline.state, lane=lane, cursor=timeline.limits.start)
        await settle(pilot)
        described = calls_of_same_line(monkeypatch, app)
        for _ in range(BURST):
            app.post_message(events.Key("n", "n"))
        await settle(pilot)
        last = timeline.state.selected
        assert last is not None and last == nth_event(timeline, lane, BURST)
        assert described == [last]  # not once a key
        assert shown(app, "#event-text") == details_of(app, last)


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


def calls_of_same_line(monkeypatch: pytest.MonkeyPatch, app: GraphDoctorApp) -> list[EventRef]:
    """The events whose details are made from now on (each asks for its line's events)."""
    asked: list[EventRef] = []
    same_line = app.view.same_line

    def noted(ref: EventRef) -> object:
        asked.append(ref)
        return same_line(ref)

    monkeypatch.setattr(app.view, "same_line", noted)
    return asked


def details_of(app: GraphDoctorApp, ref: EventRef) -> str:
    screen = app.screen
    assert isinstance(screen, TimelineScreen)
    return plain(screen.details(ref, app.view.same_line(ref)))
