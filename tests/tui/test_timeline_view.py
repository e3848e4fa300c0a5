"""The timeline's moves, as pure functions of its state."""

from __future__ import annotations

from dataclasses import replace

from graphdoctor.tui.events import EventRef
from graphdoctor.tui.palette import Mark
from graphdoctor.tui.timeline.lanes import EventAt, Lane
from graphdoctor.tui.timeline.layout import Window
from graphdoctor.tui.timeline.series import Series
from graphdoctor.tui.timeline.view import (
    ScreenRow,
    TimelineState,
    fit,
    pan,
    screen_rows,
    select,
    show_moment,
    step_cursor,
    zoom,
)
from graphdoctor.tui.widgets.timeline import Timeline

LIMITS = Window(0, 1_000_000)
SYNCS = Series("syncs", "sync", Mark("X", "red", 4), [100_000, 500_000])


def test_zoom_keeps_the_cursor_where_it_was_on_screen() -> None:
    state = TimelineState(LIMITS, cursor=250_000)
    zoomed = zoom(state, LIMITS, zoom_in=True)
    assert zoomed.window.span == 500_000
    assert zoomed.cursor_column(100) == state.cursor_column(100) == 25
    assert zoom(zoomed, LIMITS, zoom_in=False).window == LIMITS


def test_pan_moves_the_window_and_the_cursor_together() -> None:
    state = TimelineState(Window(0, 100_000), cursor=50_000)
    moved = pan(state, LIMITS, direction=1)
    assert moved.window == Window(25_000, 125_000)
    assert moved.cursor == 75_000


def test_the_cursor_scrolls_the_window_at_its_edge() -> None:
    state = TimelineState(Window(0, 100), cursor=95)
    stepped = step_cursor(state, Window(0, 1000), width=10, columns=1)
    assert stepped.window == Window(10, 110)
    assert stepped.cursor_column(10) == 9


def test_fit_shows_the_whole_run() -> None:
    assert fit(TimelineState(Window(10, 20), 15), LIMITS).window == LIMITS


def test_show_moment_keeps_the_zoom_when_the_event_is_on_screen() -> None:
    state = TimelineState(Window(0, 200_000), cursor=0)
    shown = show_moment(state, LIMITS, 150_000, 150_000, context=100_000)
    assert shown.window == Window(0, 200_000) and shown.cursor == 150_000
    far = show_moment(state, LIMITS, 800_000, 800_000, context=100_000)
    assert far.window == Window(700_000, 900_000)


def test_show_moment_zooms_in_from_a_much_wider_view() -> None:
    shown = show_moment(TimelineState(LIMITS, 0), LIMITS, 500_000, 500_000, context=10_000)
    assert shown.window == Window(490_000, 510_000)


def test_selection_is_drawn_on_its_lane() -> None:
    lanes = [Lane("syncs", "Syncs", [SYNCS])]
    state = select(TimelineState(LIMITS, cursor=0), EventAt(SYNCS, 1), lane=0)
    assert state.selected == EventRef("syncs", 1) and state.selected_at == 500_000
    row = screen_rows(lanes, state, 10)[0]
    assert row.cells[5][1] == "bold bright_white on blue"
    assert row.cells[0][1].endswith("reverse")  # the cursor
    assert select(state, None).selected is None


def test_overlays_draw_in_order_after_the_cursor_and_the_selection() -> None:
    lanes = [Lane("syncs", "Syncs", [SYNCS])]
    state = select(TimelineState(LIMITS, cursor=0), EventAt(SYNCS, 1), lane=0)
    seen: list[list[int]] = []

    def hash_first(rows: list[ScreenRow], edges: list[int]) -> list[ScreenRow]:
        seen.append(edges)
        return [replace(row, cells=[("#", row.cells[0][1]), *row.cells[1:]]) for row in rows]

    def count_hashes(rows: list[ScreenRow], edges: list[int]) -> list[ScreenRow]:
        hashes = sum(glyph == "#" for row in rows for glyph, _ in row.cells)
        return [*rows, ScreenRow(-1, f"{hashes} #", [])]

    rows = screen_rows(lanes, state, 10, overlays=(hash_first, count_hashes))
    assert rows[0].cells[0] == ("#", "reverse")  # over the cursor, which was drawn first
    assert rows[0].cells[5][1] == "bold bright_white on blue"  # the selection stays
    assert rows[-1].label == "1 #"  # the second saw what the first drew
    assert seen == [[i * 100_000 for i in range(11)]]
    assert screen_rows(lanes, state, 10) == screen_rows(lanes, state, 10, overlays=())


async def test_the_widget_draws_the_overlays_it_was_given() -> None:
    from textual.app import App, ComposeResult

    lanes = [Lane("syncs", "Syncs", [SYNCS])]

    def ruler(rows: list[ScreenRow], edges: list[int]) -> list[ScreenRow]:
        return [replace(row, cells=[("|", "")] * len(row.cells)) for row in rows]

    class OneTimeline(App[None]):
        def compose(self) -> ComposeResult:
            yield Timeline(lanes, LIMITS, overlays=(ruler,))

    app = OneTimeline()
    async with app.run_test(size=(60, 10)):
        timeline = app.query_one(Timeline)
        drawn = "".join(segment.text for segment in timeline.render_line(1))
        assert drawn == "Syncs".ljust(timeline.label_width) + "|" * timeline.plot_width
