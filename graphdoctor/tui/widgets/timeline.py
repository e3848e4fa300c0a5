"""The timeline widget: lanes of events against a time axis, drawn with the Line API.

Only the visible rows are drawn, and each comes from :mod:`graphdoctor.tui.timeline.view`,
whose lanes bisect their events for the visible window; so a redraw costs the same for a
report of a thousand events or a million. The axis stays on the first row while the lanes
scroll under it, and the last row is a legend of the glyphs in view (or, on a lane of a
replay's nodes, the node under the cursor).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from graphdoctor.tui.events import EventRef
from graphdoctor.tui.timeline import legend
from graphdoctor.tui.timeline import view as moves
from graphdoctor.tui.timeline.findings import Problem, Span, next_problem
from graphdoctor.tui.timeline.graph_groups import GraphGroupLane
from graphdoctor.tui.timeline.lanes import EventAt, Lane, fit_heights
from graphdoctor.tui.timeline.layout import Cell, Window, column_edges, fit_label, time_of
from graphdoctor.tui.timeline.node_lane import NodeLane
from graphdoctor.tui.timeline.ranks import (
    label_width,
    lane_in_next_rank,
    phase_lane_of,
    unranked_key,
)
from graphdoctor.tui.timeline.view import (
    Overlay,
    ScreenRow,
    TimelineState,
    axis_row,
    screen_rows,
)

LEGEND_ROWS = 1  # the last row says what the glyphs in view mean
LEGEND_LABEL = "key"
NODE_LABEL = "node"
NEAR_COLUMNS = 2  # enter and clicks pick an event this many columns away if none is under
SMALL_SCREEN_ROWS = 30  # taller screens give the memory and GPU lanes more rows
# Keys the footer shows in pairs, so that the ones a person needs first fit in 80 columns.
ZOOM = Binding.Group("Zoom", compact=True)
EVENT = Binding.Group("Event", compact=True)
PROBLEM = Binding.Group("Problem", compact=True)


@lru_cache(maxsize=256)
def _style(text: str) -> Style:
    return Style.parse(text) if text else Style.null()


class Timeline(ScrollView, can_focus=True):
    """Lanes of events against time; the keys zoom, pan, move the cursor and select."""

    DEFAULT_CSS = """
    Timeline {
        height: 1fr;
        scrollbar-size-vertical: 1;
    }
    """

    BINDINGS = [
        Binding("left,h", "step(-1)", "Cursor left", show=False),
        Binding("right,l", "step(1)", "Cursor right", show=False),
        Binding("shift+left,H", "pan(-1)", "Pan left", show=False),
        Binding("shift+right,L", "pan(1)", "Pan right", show=False),
        Binding("up,k", "lane(-1)", "Lane up", show=False),
        Binding("down,j", "lane(1)", "Lane down", show=False),
        Binding("plus,equals_sign", "zoom(True)", "Zoom in", key_display="+", group=ZOOM),
        Binding("minus,underscore", "zoom(False)", "Zoom out", key_display="-", group=ZOOM),
        Binding("0", "fit", "Whole run", show=False),  # in the hint: the footer keeps q at 80
        Binding("n", "jump(True)", "Next event", group=EVENT),
        Binding("N", "jump(False)", "Previous event", key_display="N", group=EVENT),
        Binding("p", "problem(True)", "Next problem (a finding's evidence)", group=PROBLEM),
        Binding("P", "problem(False)", "Previous problem", key_display="P", group=PROBLEM),
        Binding("enter", "select_here", "Details"),
        Binding("z", "zoom_phase", "Zoom to phase", show=False),
        Binding("x", "open_group", "Open or close a group of graphs", show=False),
        Binding("home", "edge(False)", "Run start", show=False),
        Binding("end", "edge(True)", "Run end", show=False),
        Binding("escape", "clear", "Clear selection", show=False),
        Binding("right_square_bracket", "rank(1)", "Same lane, next rank", show=False),
        Binding("left_square_bracket", "rank(-1)", "Same lane, previous rank", show=False),
    ]

    state: reactive[TimelineState] = reactive(TimelineState(Window(0, 1), 0), always_update=True)

    class Changed(Message):
        """The window, cursor or lane changed."""

        def __init__(self, state: TimelineState) -> None:
            super().__init__()
            self.state = state

    class Selected(Message):
        """An event was selected (``ref`` is None when the selection was cleared)."""

        def __init__(self, ref: EventRef | None) -> None:
            super().__init__()
            self.ref = ref

    def __init__(self, lanes: Sequence[Lane], limits: Window, *,
                 problems: Sequence[Problem] = (), overlays: Sequence[Overlay] = (),
                 id: str | None = None):
        super().__init__(id=id)
        self.lanes = list(lanes)
        self.limits = limits
        self.problems = problems  # what p and P visit
        self.overlays = tuple(overlays)
        self._highlight: tuple[Overlay, ...] = ()  # drawn after the overlays, per selection
        self.label_width = label_width(self.lanes)  # wider when the lanes carry ranks
        self.set_reactive(Timeline.state, TimelineState(limits, limits.start))
        self._rows: list[ScreenRow] = []
        self._rows_for: tuple[TimelineState, int] | None = None
        self._revealed: EventRef | None = None  # the event a jump from elsewhere selected

    # -- geometry ---------------------------------------------------------------------------
    @property
    def plot_width(self) -> int:
        """Columns for events, right of the lane labels."""
        return max(self.scrollable_content_region.width - self.label_width, 1)

    def _lane_rows(self) -> list[ScreenRow]:
        key = (self.state, self.plot_width)
        if self._rows_for != key:
            self._rows = screen_rows(self.lanes, self.state, self.plot_width,
                                     (*self.overlays, *self._highlight))
            self._rows_for = key
        return self._rows

    def highlight(self, overlay: Overlay | None) -> None:
        """Draw ``overlay`` (the selection's, say) over the lanes until the next call."""
        self._highlight = () if overlay is None else (overlay,)
        self._rows_for = None
        self.refresh()

    def lane_row_span(self, lane: int) -> tuple[int, int]:
        """First and last screen row (after the axis) of a lane."""
        before = sum(self.lanes[i].height for i in range(lane))
        return before, before + self.lanes[lane].height - 1

    def on_resize(self, event: events.Resize) -> None:
        fit_heights(self.lanes, self.screen.size.height - SMALL_SCREEN_ROWS)
        self.label_width = label_width(self.lanes, event.size.width)
        self._measure(event.size.width)
        self.post_message(self.Changed(self.state))  # the columns' width changed with it

    def _measure(self, width: int) -> None:
        """The lanes' rows, after their heights changed: scroll room, and a redraw."""
        self.virtual_size = Size(width, 1 + sum(lane.height for lane in self.lanes) + LEGEND_ROWS)
        self._rows_for = None
        self.refresh()

    # -- drawing ----------------------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        if y == 0:
            return self._strip(axis_row(self.state, self.plot_width), selected=False)
        rows = self._lane_rows()
        if y == self._legend_line(len(rows)):
            return self._strip(self.legend_row(), selected=False)
        index = y - 1 + int(self.scroll_offset.y)
        if index >= len(rows):
            return Strip.blank(self.scrollable_content_region.width)
        row = rows[index]
        return self._strip(row, selected=row.lane == self.state.lane)

    def _strip(self, row: ScreenRow, selected: bool) -> Strip:
        label_style = "bold reverse" if selected else "bold"
        width = self.label_width
        label = f"{fit_label(row.label, width - 1):<{width}}"
        segments = [Segment(label, _style(label_style if row.label else ""))]
        segments += _runs(row.cells)
        return Strip(segments, width + len(row.cells))

    def _legend_line(self, rows: int) -> int:
        """The line the legend is on: under the last lane where the lanes fit, else the last
        line, under the lanes scrolling past."""
        last = self.scrollable_content_region.height - 1
        return max(min(last, 1 + rows - int(self.scroll_offset.y)), 1)

    def legend_row(self) -> ScreenRow:
        """The last row: the node under the cursor on a lane of a replay's nodes; else what
        the glyphs in view mean."""
        lane = self.lanes[self.state.lane]
        if isinstance(lane, NodeLane):
            text = lane.describe(self.state.cursor)
            if text:
                return ScreenRow(-1, NODE_LABEL, [(c, "bold") for c in text[:self.plot_width]])
        found = legend.entries(self.lanes, self.state.window, self.plot_width)
        return ScreenRow(-1, LEGEND_LABEL, legend.line(found, self.plot_width))

    def watch_state(self, old: TimelineState, new: TimelineState) -> None:
        self.refresh()
        if new.lane != old.lane:
            self._scroll_to_lane(new.lane)
        self.post_message(self.Changed(new))
        if new.selected != old.selected:
            self.post_message(self.Selected(new.selected))

    def _scroll_to_lane(self, lane: int) -> None:
        first, last = self.lane_row_span(lane)
        visible = self.scrollable_content_region.height - 1 - LEGEND_ROWS  # between axis, legend
        top = int(self.scroll_offset.y)
        if first < top:
            self.scroll_to(y=first, animate=False)
        elif last >= top + visible:
            self.scroll_to(y=last - visible + 1, animate=False)

    # -- actions ----------------------------------------------------------------------------
    def action_step(self, columns: int) -> None:
        self.state = moves.step_cursor(self.state, self.limits, self.plot_width, columns)

    def action_pan(self, direction: int) -> None:
        self.state = moves.pan(self.state, self.limits, direction)

    def action_lane(self, delta: int) -> None:
        lane = min(max(self.state.lane + delta, 0), len(self.lanes) - 1)
        self.state = replace(self.state, lane=lane)

    def action_rank(self, step: int) -> None:
        """To the lane of the next (or previous) rank that shows the same thing."""
        self.state = replace(self.state, lane=lane_in_next_rank(self.lanes, self.state.lane, step))

    def action_zoom(self, zoom_in: bool) -> None:
        self.state = moves.zoom(self.state, self.limits, zoom_in)

    def action_fit(self) -> None:
        self.state = moves.fit(self.state, self.limits)

    def action_edge(self, end: bool) -> None:
        """To the run's start (or end), keeping the zoom."""
        t = self.limits.end - 1 if end else self.limits.start
        context = (self.state.window.span + 1) // 2  # half the window, rounded up: the same zoom
        self.state = replace(moves.show_moment(self.state, self.limits, t, t, context), cursor=t)

    def action_jump(self, forward: bool) -> None:
        """To the next (or previous) event on the cursor's lane, keeping the zoom."""
        event = self.lanes[self.state.lane].next_event(self.state.cursor, forward)
        if event is None:
            self.notify("No more events on this lane.", timeout=2)
            return
        state = moves.show_moment(self.state, self.limits, event.time, event.time,
                                  self.state.window.span // 2)
        self.state = replace(moves.select(state, event), cursor=event.time)

    def action_problem(self, forward: bool) -> None:
        """To the next (or previous) piece of a finding's evidence on any lane, selected on
        its own lane, keeping the zoom when it fits; from the whole run, zoomed to it with
        some of its phase around (at the whole run's zoom it would sit in the edge column)."""
        problem = next_problem(self.problems, self.state.cursor, self.state.selected, forward)
        found = self._locate(problem.ref, problem.start) if problem is not None else None
        if problem is None or found is None:
            self.notify("No more problems that way.", timeout=2)
            return
        lane, event = found
        whole = self.state.window.span >= self.limits.span
        context = self._reveal_context(problem.start, problem.start, lane) if whole else \
            (self.state.window.span + 1) // 2  # half the window, rounded up: the same zoom
        state = moves.show_moment(self.state, self.limits, problem.start, problem.start, context)
        self.state = replace(moves.select(state, event, lane), cursor=problem.start)

    def action_select_here(self) -> None:
        """Select the event under the cursor on its lane, or the nearest within two columns."""
        edges = column_edges(self.state.window, self.plot_width)
        column = min(max(self.state.cursor_column(self.plot_width), 0), self.plot_width - 1)
        lane = self.lanes[self.state.lane]
        event = None
        for reach in range(NEAR_COLUMNS + 1):
            start = edges[max(column - reach, 0)]
            end = edges[min(column + reach + 1, self.plot_width)]
            event = lane.event_near(start, end, self.state.cursor)
            if event is not None:
                break
        self.state = moves.select(self.state, event)

    def action_zoom_phase(self) -> None:
        """Zoom to the phase the cursor is in (on the rank of the cursor's lane)."""
        lane = phase_lane_of(self.lanes, self.state.lane)
        cursor = self.state.cursor
        phases = lane.event_near(cursor, cursor + 1, cursor) if lane is not None else None
        if phases is None or phases.series.ends is None:
            return
        start, end = phases.time, phases.series.ends[phases.index]
        margin = max((end - start) // 20, 1)
        window = Window(start - margin, end + margin).clamped(self.limits)
        self.state = replace(self.state, window=window, cursor=start)

    def action_open_group(self) -> None:
        """On a group of graphs from one line: a row per graph, or one row for all again."""
        lane = self.lanes[self.state.lane]
        if isinstance(lane, GraphGroupLane):
            lane.toggle()
            self._measure(self.size.width)

    def action_clear(self) -> None:
        self.state = moves.select(self.state, None)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Escape clears a selection the user made here; with none, or with the one a jump
        selected (a finding's evidence, a search hit) while there is a way back, it goes on
        to the app, back along the jumps that led here: one Esc goes back whence Enter came."""
        if action != "clear":
            return True
        way_back: tuple[str, ...] = getattr(self.app, "way_back", ())
        jumped = self.state.selected == self._revealed and bool(way_back)
        return not (self.state.selected is None or jumped)

    # -- revealing an event from elsewhere (a finding's evidence, a search) ---------------
    def reveal(self, ref: EventRef, start: int, end: int, frame: Span | None = None,
               lanes: Sequence[str] = ()) -> bool:
        """Select ``ref`` and zoom to it with some of its phase around, or to all of
        ``frame`` (with a margin) when given, or framed as the first of ``lanes`` (by key)
        to show it draws it; False if no lane shows it."""
        found = moves.locate_on(self.lanes, ref, lanes) or self._locate(ref, start)
        if found is None:
            return False
        index, event = found
        if lanes and unranked_key(self.lanes[index]).startswith(tuple(lanes)):
            start, end = event.time, moves.end_of(event)
            frame = (start, end)
        if frame is not None and frame[1] > frame[0]:
            window = moves.framed(self.limits, *frame, self.plot_width)
            state = replace(self.state, window=window)
        else:
            state = moves.show_moment(self.state, self.limits, start, end,
                                      self._reveal_context(start, end, index))
        self.state = replace(moves.select(state, event, index), cursor=start)
        self._revealed = event.ref
        return True

    def _locate(self, ref: EventRef, t: int) -> tuple[int, EventAt] | None:
        """The first lane that shows ``ref`` (which happened at ``t``), and its entry there."""
        for index, lane in enumerate(self.lanes):
            event = lane.locate(ref, t)
            if event is not None:
                return index, event
        return None

    def _reveal_context(self, start: int, end: int, lane: int) -> int:
        """How much to show either side: a quarter of the surrounding phase (of the event's
        rank), within limits."""
        phases = phase_lane_of(self.lanes, lane)
        phase = phases.event_near(start, start + 1, start) if phases is not None else None
        length = self.limits.span // 4
        if phase is not None and phase.series.ends is not None:
            length = (phase.series.ends[phase.index] - phase.time) // 4
        return max(end - start, min(max(length, self.limits.span // 500), self.limits.span // 4))

    # -- mouse --------------------------------------------------------------------------------
    def on_click(self, event: events.Click) -> None:
        if event.y >= self.scrollable_content_region.height - LEGEND_ROWS:
            return  # the legend: no lane under it
        column = event.x - self.label_width
        row = event.y - 1 + int(self.scroll_offset.y)
        lane = self._lane_at_row(row)
        if lane is None:
            return
        if not 0 <= column < self.plot_width:  # on the labels: choose the lane only
            self.state = replace(self.state, lane=lane)
            return
        cursor = time_of(self.state.window, self.plot_width, column)
        self.state = replace(self.state, lane=lane, cursor=cursor)
        self.action_select_here()

    def _lane_at_row(self, row: int) -> int | None:
        for index in range(len(self.lanes)):
            first, last = self.lane_row_span(index)
            if first <= row <= last:
                return index
        return None

    def _on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        self._wheel(event, zoom_in=False)

    def _on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        self._wheel(event, zoom_in=True)

    def _wheel(self, event: events.MouseEvent, zoom_in: bool) -> None:
        """The wheel zooms around the pointer; with shift (or ctrl) it pans."""
        event.prevent_default()
        event.stop()
        if event.shift or event.ctrl:
            self.action_pan(-1 if zoom_in else 1)
            return
        column = min(max(event.x - self.label_width, 0), self.plot_width - 1)
        anchor = time_of(self.state.window, self.plot_width, column)
        factor = moves.ZOOM_STEP if zoom_in else 1 / moves.ZOOM_STEP
        self.state = replace(self.state,
                             window=self.state.window.zoomed(factor, anchor, self.limits))


def _runs(cells: list[Cell]) -> list[Segment]:
    """Cells as segments, one per run of the same style."""
    segments: list[Segment] = []
    start = 0
    for index in range(1, len(cells) + 1):
        if index == len(cells) or cells[index][1] != cells[start][1]:
            text = "".join(glyph for glyph, _ in cells[start:index])
            segments.append(Segment(text, _style(cells[start][1])))
            start = index
    return segments

