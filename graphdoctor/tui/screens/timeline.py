"""Timeline: what happened when. Lanes for the phases, the CPU threads, collectives, each
CUDA stream, memory, syncs, compile events and GPU utilisation (a group of them per rank in a
distributed run) and the findings' markers; a status line that says where the cursor is;
and the details of the selected event, with its stack and the user's source line, whose
other events are underlined on every lane."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from rich.console import Group, RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.css.query import NoMatches
from textual.widgets import Footer, Static

from graphdoctor.clean_text import clean
from graphdoctor.facts.job_clock import OWN_STARTS
from graphdoctor.tui.capture_view import run_overlays
from graphdoctor.tui.events import EventRef
from graphdoctor.tui.rendering import cut_at_word, details_view
from graphdoctor.tui.report_view import ReportView
from graphdoctor.tui.safe_text import report_text
from graphdoctor.tui.same_line import SameLine
from graphdoctor.tui.screens.base import ReportScreen, ScreenEntry
from graphdoctor.tui.screens.help import binding_lines
from graphdoctor.tui.timeline.findings import FINDINGS, Span, evidence_lines
from graphdoctor.tui.timeline.layout import Window
from graphdoctor.tui.timeline.node_lane import NODE_LANE
from graphdoctor.tui.timeline.ranks import unranked_key
from graphdoctor.tui.timeline.targets import (
    CAPTURES,
    REPLAYS,
    TypedTimeError,
    spans,
    typed_window,
)
from graphdoctor.tui.timeline.view import TimelineState, framed, recording_note
from graphdoctor.tui.widgets.timeline import Timeline
from graphdoctor.units import format_duration, format_moment

HINT = ("←/→ move · ↑/↓ lane · +/- zoom, </> ten times · 0 whole run · "
        "n/N next/previous event on the lane · "
        "p/P next/previous problem (a finding's evidence, on any lane) · enter details · "
        "zoom to: e the event, z its phase, c/C a graph's capture, r/R a replay, "
        ": a time or range you type (1.20s-1.21s, +500us) · click selects, wheel zooms · ? help")
SHORT_HINT = "+/- </> zoom · zoom to: e event, z phase, c capture, r replay, : time · ? keys"
FAR_ZOOM = 10  # < and > zoom this many times at once
FULL_HINT_FROM_ROWS = 40  # a screen shorter than this gets the one-line hint
RANKS_HINT = ("\nEach rank has its lanes (r0, r1…), on one time axis ({how}). "
              "[/] same lane on the previous/next rank.")
STATUS_BREAKS = (" · ", " (")  # where a status line too long is cut: a figure keeps its unit
OWN_STARTS_STATUS = "· times from each rank's start"
WALL_CLOCKS_STATUS = "· ranks on their wall clocks"


class TimelineScreen(ReportScreen):
    """The timeline, its status line and the selected event's details. Built on its first
    visit and kept (a mode of the app): the window, cursor, lane and selection are as they
    were left when it is shown again, unless a jump asks it to show something."""

    BINDINGS = [
        Binding("greater_than_sign", "zoom_far(True)", f"Zoom in {FAR_ZOOM} times",
                key_display=">", show=False),
        Binding("less_than_sign", "zoom_far(False)", f"Zoom out {FAR_ZOOM} times",
                key_display="<", show=False),
        Binding("e", "zoom_event", "Zoom to the selected event (or the one under the cursor)",
                show=False),
        Binding("c", f"zoom_span('{CAPTURES}', True)",
                "Zoom to the capture at the cursor, or the next", show=False),
        Binding("C", f"zoom_span('{CAPTURES}', False)", "Zoom to the previous capture",
                key_display="C", show=False),
        Binding("r", f"zoom_span('{REPLAYS}', True)",
                "Zoom to the replay at the cursor (its nodes), or the next", show=False),
        Binding("R", f"zoom_span('{REPLAYS}', False)", "Zoom to the previous replay",
                key_display="R", show=False),
        Binding("colon", "go_to", "Show a time or range you type (1.20s-1.21s, +500us)",
                key_display=":", show=False),
    ]

    def __init__(self, view: ReportView, screens: Sequence[ScreenEntry], name: str) -> None:
        super().__init__(view, screens, name)
        self._asked: set[Callable[[], None]] = set()  # updates called for, not yet made

    @classmethod
    def key_help(cls) -> list[tuple[str, str]]:
        return binding_lines([*Timeline.BINDINGS, *cls.BINDINGS])

    def compose(self) -> ComposeResult:
        yield self.mode_bar()
        yield Timeline(self.view.lanes, self.view.limits, problems=self.view.problems,
                       overlays=run_overlays(self.view), id="timeline")
        yield Static(id="timeline-status")
        with VerticalScroll(id="event-detail"):
            yield Static(self.hint(), id="event-text")
        yield Footer()

    @property
    def timeline(self) -> Timeline:
        return self.query_one(Timeline)

    def on_mount(self) -> None:
        self.timeline.focus()
        self.call_after_refresh(self._show_status)

    def kept_place(self) -> object:
        return self.timeline.state, self.timeline.limits

    def return_to(self, place: object) -> None:
        """The same window, cursor, lane and selection; a window that showed the whole run
        shows the whole of it still, as it grows (``tail -f``)."""
        if not isinstance(place, tuple):
            return
        state, limits = place
        if not isinstance(state, TimelineState) or state.window == limits:
            return
        lane = min(state.lane, len(self.timeline.lanes) - 1)
        selected = state.selected if state.selected is not None and \
            state.selected.kind != FINDINGS else None  # a marker's number moves with them
        self.timeline.state = TimelineState(state.window, state.cursor, max(lane, 0), selected,
                                            state.selected_at if selected else None)

    def _show_status(self) -> None:
        try:
            status = self.query_one("#timeline-status", Static)
        except NoMatches:  # built anew meanwhile (a live view's next report), which says it
            return
        width = status.size.width or self.app.size.width
        status.update(cut_at_word(self.status_text(self.timeline.state), width, STATUS_BREAKS))

    def reveal(self, ref: EventRef, frame: Span | None = None,
               lanes: tuple[str, ...] = ()) -> None:
        """Select the event ``ref`` and bring it into view, with all of ``frame`` if given
        (or framed as one of ``lanes`` draws it)."""
        span = self.view.span_of(ref)
        if span is None or not self.timeline.reveal(ref, *span, frame, lanes):
            self.notify(f"{ref} is not on the timeline.", severity="warning", timeout=3)
        self.timeline.focus()

    # -- zoom to (graphdoctor.tui.timeline.targets) ------------------------------------------
    def _show(self, window: Window, cursor: int) -> None:
        self.timeline.state = replace(self.timeline.state, window=window, cursor=cursor)

    def action_zoom_far(self, zoom_in: bool) -> None:
        state = self.timeline.state
        factor = 1 / FAR_ZOOM if zoom_in else FAR_ZOOM
        anchor = min(max(state.cursor, state.window.start), state.window.end)
        self._show(state.window.zoomed(factor, anchor, self.timeline.limits), state.cursor)

    def action_zoom_event(self) -> None:
        """The selected event framed whole; with none, the one under the cursor, selected."""
        if self.timeline.state.selected is None:
            self.timeline.action_select_here()
        ref = self.timeline.state.selected
        span = self.view.span_of(ref) if ref is not None else None
        if span is None:
            self.notify("No event here to zoom to: select one (enter, n, p).", timeout=3)
            return
        start, end = span
        self._show(framed(self.timeline.limits, start, max(end, start + 1),
                          self.timeline.plot_width), start)

    def action_zoom_span(self, sort: str, forward: bool) -> None:
        """To the capture (or the replay on the GPU) the cursor is in, framed; pressed again,
        the next (or previous) one, on the rank of the cursor's lane."""
        timeline = self.timeline
        state = timeline.state
        found = spans(timeline.lanes, sort, timeline.lanes[state.lane].rank)
        index = found.step(state.cursor, state.window, forward)
        if index is None:
            other = ("C" if sort == CAPTURES else "R") if forward else sort[0]
            self.notify(f"No {sort} {'after' if forward else 'before'} the cursor ({other}: "
                        f"the other way)." if len(found) else
                        f"No {sort} on this rank's streams.", timeout=3)
            return
        start, end = found.starts[index], found.ends[index]
        self._show(framed(timeline.limits, start, end, timeline.plot_width), start)
        on_nodes = unranked_key(timeline.lanes[state.lane]).startswith(NODE_LANE)
        if not (sort == REPLAYS and on_nodes):  # the lane that draws it (a replay's nodes stay)
            timeline.state = replace(timeline.state, lane=found.lanes[index])

    def action_go_to(self) -> None:
        from graphdoctor.tui.screens.go_to import GoToTime

        self.app.push_screen(GoToTime(), self._go_to)

    def _go_to(self, typed: str | None) -> None:
        if not typed:
            return
        state = self.timeline.state
        try:
            window, cursor = typed_window(typed, state.cursor, state.window, self.timeline.limits)
        except TypedTimeError as error:
            self.notify(str(error), severity="warning", timeout=5)
            return
        self._show(window, cursor)

    def on_timeline_changed(self) -> None:
        self._once_queue_handled(self._show_status)

    def on_timeline_selected(self) -> None:
        self._once_queue_handled(self._show_selection)

    def _once_queue_handled(self, show: Callable[[], None]) -> None:
        """Call ``show`` after the messages queued now, once however often it is asked for
        meanwhile: a burst of keys (an arrow held, n pressed fast) writes the status line
        and the event's details once, from the timeline's state then, not once a key."""
        if show not in self._asked:
            self._asked.add(show)
            self.call_later(self._shown, show)

    def _shown(self, show: Callable[[], None]) -> None:
        self._asked.discard(show)
        try:
            show()
        except NoMatches:  # built anew meanwhile (a live view's next report), which shows it
            pass

    def _show_selection(self) -> None:
        """The selected event's details, its line's other events underlined; or the keys."""
        ref = self.timeline.state.selected
        pane = self.query_one("#event-text", Static)
        if ref is None:
            self.timeline.highlight(None)
            pane.update(self.hint())
        else:
            same_line = self.view.same_line(ref)
            self.timeline.highlight(same_line.overlay() if same_line is not None else None)
            pane.update(self.details(ref, same_line))
        self.query_one("#event-detail").scroll_home(animate=False)

    def details(self, ref: EventRef, same_line: SameLine | None) -> RenderableType:
        """Which findings the event is evidence of, how many events its line of the user's
        code made (``same_line``, underlined on the lanes), then its own details."""
        parts: list[RenderableType] = [
            report_text(line, "bold") for line in
            evidence_lines(self.view.problems, ref, self.view.findings)]
        if same_line is not None:
            parts.append(report_text(same_line.note(self.view.trace_of(ref.rank).meta.cwd),
                                     "dim"))
        ran = self._ran_on_gpu(ref)
        if ran:
            parts.append(Text(ran, style="dim"))
        return Group(*parts, details_view(self.view, self.view.describe(ref)))

    def _ran_on_gpu(self, ref: EventRef) -> str:
        """For a replay selected on its stream's lane (or its nodes'): when the launch that
        queued it was made, and when it ran, as the lane draws it."""
        state = self.timeline.state
        lane = self.timeline.lanes[state.lane]
        span = self.view.span_of(ref)
        if ref.kind != "replays" or span is None or state.selected_at is None \
                or not unranked_key(lane).startswith(("stream:", NODE_LANE)):
            return ""
        launched, ran = span[0], state.selected_at
        step = max(state.window.span // max(self.timeline.plot_width, 1), 1)
        waited = f", {format_duration(ran - launched)} after its launch, behind the work " \
                 "queued before it on its stream" if ran > launched else ""
        return (f"launched at {format_moment(launched, step)} (replay() on the CPU lane); on "
                f"the GPU from {format_moment(ran, step)}{waited}")

    def hint(self) -> Text:
        """The keys; and, where the axis stops well before the run's time in the summary,
        why (the status line says so too, but a narrow terminal cuts it). A short screen
        gets one line (the help has the rest), so the lanes keep the rows."""
        if self.app.size.height < FULL_HINT_FROM_ROWS:
            return Text(SHORT_HINT, style="dim")
        note = recording_note(self.view.run_end, self.view.wall_ns)
        how = clean("; ".join(self.view.clock.how))  # host names: the report's text
        return Text(HINT + (RANKS_HINT.format(how=how) if self.view.multi_rank else "")
                    + (f"\nThe {note}." if note else ""), style="dim")

    def on_resize(self) -> None:
        """The hint folds or unfolds with the screen's height (when no event is shown)."""
        if self.timeline.state.selected is None:
            self.query_one("#event-text", Static).update(self.hint())

    def status_text(self, state: TimelineState) -> Text:
        """Where the cursor is, in which phase (of the lane's rank), on which lane, and what
        the window covers."""
        width = self.timeline.plot_width
        step = max(state.window.span // max(width, 1), 1)
        lane = self.view.lanes[state.lane]
        text = Text()
        text.append(f" {format_moment(state.cursor, step)} ", style="bold reverse")
        text.append(clean(f" {self.view.phase_at(state.cursor, lane.rank)} "), style="bold")
        text.append(clean(f"· {lane.label.strip()} "), style="")
        text.append(f"· {format_moment(state.window.start, step)} – "
                    f"{format_moment(state.window.end, step)} "
                    f"({format_duration(state.window.span)}, {format_duration(step)}/col)",
                    style="dim")
        note = recording_note(self.view.run_end, self.view.wall_ns)
        if note and state.window.end >= self.timeline.limits.end:  # where the axis stops short
            text.append(f" · {note}", style="dim")
        if self.view.multi_rank:  # last, so a narrow terminal cuts it rather than the times
            own_starts = OWN_STARTS in self.view.clock.how
            text.append(f" {OWN_STARTS_STATUS if own_starts else WALL_CLOCKS_STATUS}", style="dim")
        return text

