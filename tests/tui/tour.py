"""A tour of the app for the hostile-report tests: every screen, and on each the views of the
report's text (each finding and its evidence, an event of every kind, each grouping of the
allocations, each graph, the search results), with what the terminal would be sent at each
stop."""

from __future__ import annotations

from collections.abc import AsyncIterator

from textual._compositor import CompositorUpdate
from textual.pilot import Pilot

from graphdoctor.trace.event_kinds import KINDS, rows_of
from graphdoctor.tui.app import GraphDoctorApp
from graphdoctor.tui.events import STRUCTURE, EventRef
from graphdoctor.tui.navigation import ShowEvent
from tests.tui.helpers import settle

SIZE = (200, 70)  # room for long lines, so what is cut off is little
MOST_ROWS = 3  # rows visited per list: enough to see each kind of row


def drawn(app: GraphDoctorApp) -> str:
    """What the terminal is sent to draw the whole screen, the screens under it included:
    the same update, rendered the same way, that the app writes to a real terminal (Textual
    has no public call for it)."""
    update = app.screen._compositor.render_update(full=True,
                                                  screen_stack=app._background_screens)
    assert isinstance(update, CompositorUpdate)
    return update.render_segments(app.console)


async def tour(pilot: Pilot[None], query: str,
               rows: int = MOST_ROWS) -> AsyncIterator[tuple[str, str]]:
    """(where, what the terminal is sent) at each stop; ``query`` is typed into search, and
    ``rows`` rows of each list are visited."""
    app: GraphDoctorApp = pilot.app  # type: ignore[assignment]
    await settle(pilot)
    yield "summary", drawn(app)
    async for stop in _findings(pilot, app, rows):
        yield stop
    async for stop in _timeline(pilot, app):
        yield stop
    for screen, keys in (("allocations", ["4", "p", "o", "c"]), ("graphs", ["5"])):
        async for stop in _rows(pilot, app, screen, keys, rows):
            yield stop
    await pilot.press("question_mark")
    yield "help", drawn(app)
    await pilot.press("escape", "ctrl+f", *query)  # the search from any screen
    await settle(pilot)
    yield "search", drawn(app)
    await pilot.press("escape")


async def quick_tour(pilot: Pilot[None]) -> AsyncIterator[tuple[str, str]]:
    """The summary, the first finding, the first event of each kind, and search: most of the
    ways a report's text is drawn, in a fraction of the time of :func:`tour`."""
    app: GraphDoctorApp = pilot.app  # type: ignore[assignment]
    await settle(pilot)
    yield "summary", drawn(app)
    await pilot.press("2")
    await settle(pilot)
    yield "finding 0", drawn(app)
    async for stop in _timeline(pilot, app):
        yield stop
    await pilot.press("slash", "a")
    await settle(pilot)
    yield "search", drawn(app)
    await pilot.press("escape")


async def _findings(pilot: Pilot[None], app: GraphDoctorApp,
                    rows: int) -> AsyncIterator[tuple[str, str]]:
    await pilot.press("2")
    for number in range(min(len(app.view.findings), rows)):
        await settle(pilot)
        yield f"finding {number}", drawn(app)
        await pilot.press("e", *["down"] * rows, "tab", "down")
        await settle(pilot)
        yield f"finding {number}'s evidence", drawn(app)


async def _timeline(pilot: Pilot[None], app: GraphDoctorApp) -> AsyncIterator[tuple[str, str]]:
    """The first event of every kind, each rank's, selected and described."""
    await pilot.press("3")
    await settle(pilot)
    yield "timeline", drawn(app)
    for rank, rank_view in app.view.rank_views.items():
        trace = rank_view.trace
        kinds = [k for k in STRUCTURE if getattr(trace, k)] + \
            [kind.name for kind in KINDS if len(rows_of(trace, kind))]
        for kind in kinds:
            app.post_message(ShowEvent(EventRef(kind, 0, rank)))
            await settle(pilot)
            yield f"timeline: rank {rank}'s first {kind}", drawn(app)


async def _rows(pilot: Pilot[None], app: GraphDoctorApp, screen: str, keys: list[str],
                rows: int) -> AsyncIterator[tuple[str, str]]:
    """Each grouping (one key each), and its first rows."""
    await pilot.press(keys[0])
    for key in keys[1:] or keys[:1]:
        await pilot.press(key)
        for row in range(rows):
            await settle(pilot)
            yield f"{screen} ({key}), row {row}", drawn(app)
            await pilot.press("down")
