"""n and N after a search: the next and previous of its hits from any screen, round past the
ends, the position in the bar; a sort of event's hit steps through each of its events; esc
or a new search forgets it, and n and N are the screens' own again."""

from __future__ import annotations

from textual.command import CommandList, CommandPalette
from textual.message import Message
from textual.notifications import Notify

from graphdoctor.trace.event_kinds import BY_NAME
from graphdoctor.tui.app import GraphDoctorApp
from graphdoctor.tui.events import EventRef
from graphdoctor.tui.navigation import ShowEvent, ShowFinding, ShowGraph
from graphdoctor.tui.screens.findings import FindingsScreen
from graphdoctor.tui.screens.graphs import GraphsScreen
from graphdoctor.tui.screens.timeline import TimelineScreen
from graphdoctor.tui.widgets.table_filter import TableFilter
from graphdoctor.tui.widgets.timeline import Timeline
from tests.tui.helpers import demo_app, settle, shown

NAVIGATION = (ShowFinding, ShowGraph, ShowEvent)


def bar(app: GraphDoctorApp) -> str:
    return shown(app, "ModeBar")


def selected(app: GraphDoctorApp) -> EventRef | None:
    return app.screen.query_one(Timeline).state.selected


async def test_n_and_N_step_through_the_hits_round_the_ends_with_the_place_in_the_bar() -> None:
    posted: list[Message] = []
    app = demo_app("launch_bound")  # "graph": its finding, its graph, then phases
    async with app.run_test(size=(120, 40), message_hook=posted.append) as pilot:
        await pilot.press("slash", *"graph")
        await settle(pilot)
        count = app.screen.query_one(CommandList).option_count
        assert count > 2
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, FindingsScreen)
        assert f"hit 1 of {count} · n/N" in bar(app)
        await pilot.press("n")
        await settle(pilot)
        assert isinstance(app.screen, GraphsScreen) and f"hit 2 of {count}" in bar(app)
        await pilot.press("N", "N")  # back to the first, and round to the last
        await settle(pilot)
        assert isinstance(app.screen, TimelineScreen) and f"hit {count} of {count}" in bar(app)
        assert any("wrapped round to the last" in m.notification.message  # seen posted: a
                   for m in posted if isinstance(m, Notify))  # loaded host outlasts its 2 s
        await pilot.press("n")  # from the timeline too: its own n is the next event
        await settle(pilot)
        assert isinstance(app.screen, FindingsScreen) and f"hit 1 of {count}" in bar(app)
        assert [type(m) for m in posted if isinstance(m, NAVIGATION)][-4:] == [
            ShowGraph, ShowFinding, ShowEvent, ShowFinding]


async def test_a_sort_of_events_hit_steps_through_each_event_of_that_sort() -> None:
    app = demo_app("launch_bound")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("slash", *"synchronization device_synchronize", "enter")
        await settle(pilot)
        kinds = app.view.trace.tables["syncs"].data[BY_NAME["syncs"].sort]
        syncs = [index for index, kind in enumerate(kinds) if kind == "device_synchronize"]
        assert len(syncs) > 2
        assert selected(app) == EventRef("syncs", syncs[0])
        assert f"hit 1 of {len(syncs)} · n/N" in bar(app)
        await pilot.press("n", "n")
        await settle(pilot)
        assert selected(app) == EventRef("syncs", syncs[2])
        assert f"hit 3 of {len(syncs)}" in bar(app)


async def test_once_the_search_is_forgotten_n_is_the_timelines_next_event_again() -> None:
    posted: list[Message] = []
    app = demo_app("launch_bound")
    async with app.run_test(size=(120, 40), message_hook=posted.append) as pilot:
        await pilot.press("slash", *"graph", "enter", "N")  # the last hit: a phase
        await settle(pilot)
        assert isinstance(app.screen, TimelineScreen) and "n/N" in bar(app)
        await pilot.press("escape")  # the search (the hit it selected stays selected)
        await settle(pilot)
        assert isinstance(app.screen, TimelineScreen) and "n/N" not in bar(app)
        timeline, shown_before = app.screen.query_one(Timeline), len(posted)
        cursor = timeline.state.cursor
        await pilot.press("n")
        await settle(pilot)
        assert timeline.state.cursor != cursor
        assert not any(isinstance(m, NAVIGATION) for m in posted[shown_before:])


async def test_esc_forgets_the_search_then_goes_back() -> None:
    posted: list[Message] = []
    app = demo_app("launch_bound")
    async with app.run_test(size=(120, 40), message_hook=posted.append) as pilot:
        await pilot.press("slash", *"graph", "enter")
        await settle(pilot)
        assert isinstance(app.screen, FindingsScreen) and "n/N" in bar(app)
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, FindingsScreen)
        assert "n/N" not in bar(app) and "esc: Summary" in bar(app)  # the way back shows
        shown_before = len([m for m in posted if isinstance(m, NAVIGATION)])
        await pilot.press("n")
        await settle(pilot)
        assert len([m for m in posted if isinstance(m, NAVIGATION)]) == shown_before
        await pilot.press("escape")  # now the way back: to the Summary the search was made on
        await settle(pilot)
        assert app.current_mode == "summary"


async def test_a_new_search_forgets_the_last() -> None:
    app = demo_app("launch_bound")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("slash", *"graph", "enter")
        await settle(pilot)
        assert app.search_hits.note
        await pilot.press("ctrl+f")
        await settle(pilot)
        assert isinstance(app.screen, CommandPalette) and app.search_hits.note == ""
        await pilot.press("escape")
        await settle(pilot)
        assert "n/N" not in bar(app)


async def test_n_typed_in_a_tables_filter_is_text_not_the_next_hit() -> None:
    app = demo_app("launch_bound")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("slash", *"graph", "enter")
        await settle(pilot)
        assert isinstance(app.screen, FindingsScreen)
        await pilot.press("slash", "n")
        await settle(pilot)
        assert isinstance(app.screen, FindingsScreen)
        assert app.screen.query_one(TableFilter).typed == "n"
        assert "hit 1 of" in bar(app)
