"""What the timeline looks like for one state: the rows on screen, with the cursor and the
selection drawn in, and the moves the keys make. Pure functions; the widget only turns rows
into Textual strips and keys into calls.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from graphdoctor.tui.events import EventRef
from graphdoctor.tui.palette import SELECTED_STYLE
from graphdoctor.tui.timeline.lanes import EventAt, Lane
from graphdoctor.tui.timeline.layout import (
    MIN_SPAN_NS,
    Cell,
    Window,
    axis,
    axis_text,
    column_edges,
    column_of,
    time_of,
    with_cursor,
)
from graphdoctor.tui.timeline.ranks import unranked_key
from graphdoctor.units import format_moment

ZOOM_STEP = 0.5  # each zoom halves (or doubles) the span
PAN_SHARE = 4  # a pan moves a quarter of the window
FRAME_MARGIN_SHARE = 20  # a framed stretch gets a twentieth of its length either side
EDGE_COLUMNS = 3  # and at least this many columns, so nothing framed sits at an edge
NARROWEST_PLOT = 40  # the width framing assumes before the widget has been laid out
CLOCKS_DIFFER = 0.05  # recording end and process wall time further apart than this are told


@dataclass(frozen=True)
class ScreenRow:
    lane: int  # index into the lanes, -1 for the axis
    label: str
    cells: list[Cell]


@dataclass(frozen=True)
class TimelineState:
    """Where the user is: the window, the cursor (a moment), the lane, the selected event."""

    window: Window
    cursor: int
    lane: int = 0
    selected: EventRef | None = None
    selected_at: int | None = None  # when the selected event happened

    def cursor_column(self, width: int) -> int:
        return column_of(self.window, width, self.cursor)


Overlay = Callable[[list[ScreenRow], list[int]], list[ScreenRow]]
"""Something drawn over the lanes after the cursor and the selection: it is given the rows
(``row.lane`` indexes the lanes) and the column edges, and returns the rows to show."""


def screen_rows(lanes: Sequence[Lane], state: TimelineState, width: int,
                overlays: Sequence[Overlay] = ()) -> list[ScreenRow]:
    """Every lane row for this state, cursor and selection included (the axis excluded),
    then each of ``overlays`` in turn."""
    edges = column_edges(state.window, width)
    cursor = state.cursor_column(width)
    selected = _selected_column(state, width)
    rows = []
    for index, lane in enumerate(lanes):
        for label, cells in lane.rows(edges):
            if index == state.lane and selected is not None:
                cells = _mark_selected(cells, selected)
            rows.append(ScreenRow(index, label, with_cursor(cells, cursor)))
    for overlay in overlays:
        rows = overlay(rows, edges)
    return rows


def axis_row(state: TimelineState, width: int) -> ScreenRow:
    ticks = axis(state.window, width)
    return ScreenRow(-1, ticks.origin, [(char, "bright_black") for char in axis_text(ticks, width)])


def _selected_column(state: TimelineState, width: int) -> int | None:
    if state.selected is None or state.selected_at is None:
        return None
    column = column_of(state.window, width, state.selected_at)
    return column if 0 <= column < width else None


def _mark_selected(cells: list[Cell], column: int) -> list[Cell]:
    out = list(cells)
    glyph = cells[column][0]
    out[column] = ("◆" if glyph in " ─" else glyph, SELECTED_STYLE)
    return out


def frame_text(lanes: Sequence[Lane], state: TimelineState, width: int,
               label_width: int = 12) -> list[str]:
    """The whole timeline as plain lines, for tests and for reading in a pipe."""
    rows = [axis_row(state, width), *screen_rows(lanes, state, width)]
    return [f"{row.label[:label_width]:<{label_width}}" + "".join(g for g, _ in row.cells)
            for row in rows]


# -- moves ----------------------------------------------------------------------------------
def zoom(state: TimelineState, limits: Window, zoom_in: bool) -> TimelineState:
    """Zoom around the cursor, keeping it at the same column."""
    factor = ZOOM_STEP if zoom_in else 1 / ZOOM_STEP
    anchor = min(max(state.cursor, state.window.start), state.window.end)
    return replace(state, window=state.window.zoomed(factor, anchor, limits))


def pan(state: TimelineState, limits: Window, direction: int) -> TimelineState:
    """Move the window a quarter of its span; the cursor moves with it."""
    window = state.window.panned(direction * state.window.span // PAN_SHARE, limits)
    moved = window.start - state.window.start
    return replace(state, window=window, cursor=state.cursor + moved)


def step_cursor(state: TimelineState, limits: Window, width: int, columns: int) -> TimelineState:
    """Move the cursor by whole columns, scrolling the window when it reaches an edge."""
    column = state.cursor_column(width) + columns
    window = state.window
    if not 0 <= column < width:
        window = window.panned((column - (0 if column < 0 else width - 1)) * window.span // width,
                               limits)
        column = min(max(column, 0), width - 1)
    cursor = time_of(window, width, column)
    return replace(state, window=window, cursor=min(max(cursor, limits.start), limits.end - 1))


def fit(state: TimelineState, limits: Window) -> TimelineState:
    return replace(state, window=limits, cursor=min(max(state.cursor, limits.start), limits.end))


def show_moment(state: TimelineState, limits: Window, start: int, end: int,
                context: int) -> TimelineState:
    """Make [start, end] visible: keep the zoom when it fits, else zoom out to show it with
    ``context`` on either side; a zoom wider than ``context`` shrinks to it."""
    length = end - start
    span = state.window.span
    if length * 3 > span or span > context * 2 + length * 3:
        span = max(length * 3, context * 2)
    window = state.window
    if not (window.contains(start) and window.contains(end)) or span != window.span:
        window = window.around((start + end) // 2, span, limits)
    return replace(state, window=window, cursor=start)


def framed(limits: Window, start: int, end: int, width: int) -> Window:
    """A window showing all of [start, end] with a margin either side (a twentieth of its
    length, and never under :data:`EDGE_COLUMNS` columns, so what lies at either end of it
    is not drawn in the window's edge column); the whole run when that is wider."""
    length = max(end - start, MIN_SPAN_NS)
    columns = max(width, NARROWEST_PLOT) - 2 * EDGE_COLUMNS
    margin = max(length // FRAME_MARGIN_SHARE, -(-length * EDGE_COLUMNS // columns))
    window = Window(start - margin, start + length + margin)
    return limits if window.span >= limits.span else window.clamped(limits)


def locate_on(lanes: Sequence[Lane], ref: EventRef,
              keys: Sequence[str]) -> tuple[int, EventAt] | None:
    """The first lane, by the first of ``keys`` its key starts with, that shows ``ref``,
    wherever it draws it (a replay on the GPU runs after its launch), and its entry there."""
    for key in keys:
        for index, lane in enumerate(lanes):
            if unranked_key(lane).startswith(key):
                for series in lane.series:
                    at = series.index_of_row(ref.index) if series.source == ref.kind \
                        and series.rank == ref.rank else None
                    if at is not None:
                        return index, EventAt(series, at)
    return None


def end_of(event: EventAt) -> int:
    """When the event ends on its lane (its start, for an instant)."""
    ends = event.series.ends
    return ends[event.index] if ends is not None else event.time


def select(state: TimelineState, event: EventAt | None, lane: int | None = None) -> TimelineState:
    if event is None:
        return replace(state, selected=None, selected_at=None)
    return replace(state, selected=event.ref, selected_at=event.time,
                   lane=state.lane if lane is None else lane)


# -- what the axis cannot say -----------------------------------------------------------------
def recording_note(run_end: int, wall_ns: int) -> str:
    """Why the timeline ends before the run's time in the summary, when it visibly does: the
    axis ends at the last recorded event, the summary gives the process's wall time, which
    also counts the interpreter starting and exiting."""
    if wall_ns - run_end <= CLOCKS_DIFFER * wall_ns:  # also a report with no wall time
        return ""
    return (f"recording ends at {format_moment(run_end, 10_000_000)} · the process ran "
            f"{format_moment(wall_ns, 10_000_000)} (start-up and exit are not recorded)")
