"""One graph's story, opened from the Graphs screen: its capture, and its replays beside
the eager work they stand for.

The capture tab is a timeline zoomed to fit the capture, with only the lanes it touched
(its phases, with graphdoctor's own time apart; the CPU; the streams, with forks and joins
drawn between them; syncs) and, under it, the capture told step by step: begin, what the
user's code did at which line, the culprit, end. Choosing a step selects it on the
timeline; up from the first step goes to the timeline, down from its last lane back to
the steps. The second tab puts a median eager step beside a median replay.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, OptionList, Static, TabbedContent, TabPane
from textual.widgets.option_list import Option

from graphdoctor.clean_text import clean
from graphdoctor.trace.model import OWN, Graph
from graphdoctor.tui.capture_story import (
    BEGIN,
    END,
    OWN_TIME,
    StoryLine,
    own_time,
    story,
)
from graphdoctor.tui.capture_view import capture_lanes, capture_limits, capture_overlays
from graphdoctor.tui.palette import FINDING_MARKS, GRAPH_STATUS_STYLES, PHASE_MARKS
from graphdoctor.tui.rank_view import capture_window
from graphdoctor.tui.rendering import story_code
from graphdoctor.tui.report_view import ReportView
from graphdoctor.tui.safe_text import report_text
from graphdoctor.tui.widgets.flow import FlowingList, FlowingTimeline
from graphdoctor.tui.widgets.step_compare import StepCompare
from graphdoctor.tui.widgets.timeline import Timeline
from graphdoctor.units import format_duration

CULPRIT = "◀ the culprit"
FOCUS_IN = {"capture": "#story", "steps": "#steps-scroll"}  # the widget that takes the keys


class GraphStoryScreen(Screen[None]):
    """The capture and the replays of one graph: ``index`` in the trace of ``rank``."""

    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("c", "tab('capture')", "Capture"),
        Binding("e", "tab('steps')", "Eager vs replay"),
    ]

    def __init__(self, view: ReportView, rank: int, index: int) -> None:
        super().__init__()
        self.view, self.rank, self.index = view, rank, index
        self.graph: Graph = view.trace_of(rank).graphs[index]
        self.lines = story(view, rank, self.graph)

    def compose(self) -> ComposeResult:
        yield Static(self.heading(), id="story-head")
        with TabbedContent(id="story-tabs"):
            with TabPane("Capture", id="capture"):
                lanes = capture_lanes(self.view, self.rank, self.graph)
                yield FlowingTimeline(
                    lanes, capture_limits(self.view, self.rank, self.graph),
                    id="capture-timeline",
                    overlays=capture_overlays(self.view, self.rank, self.graph, lanes))
                yield FlowingList(*(story_option(line) for line in self.lines), id="story")
            with TabPane("Eager beside replay", id="steps"), VerticalScroll(id="steps-scroll"):
                yield StepCompare(self.view, self.rank, self.index)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#story", OptionList).focus()

    def heading(self) -> Text:
        """Which graph, how its capture ended, and how much of it was graphdoctor's."""
        graph, trace = self.graph, self.view.trace_of(self.rank)
        whose = f"rank {self.rank} · " if self.view.multi_rank else ""
        text = report_text(f"{whose}graph {graph.id} · {graph.api} · ", "bold")
        text.append_text(report_text(graph.status, GRAPH_STATUS_STYLES.get(graph.status, "")))
        start, end = capture_window(graph, self.view.of(self.rank).run_end)
        own, _ = own_time(trace, graph)
        text.append(f" · the capture took {format_duration(end - start)}")
        if own:
            text.append(f", of which graphdoctor's own {format_duration(own)} "
                        f"({own * 100 // max(end - start, 1)}%, drawn apart as ")
            text.append(f" {OWN} ", style=PHASE_MARKS[OWN].style)
            text.append(")")
        verdict = self.view.verdict_for(graph.id, self.rank)
        if verdict is not None:
            text.append(clean(f"\nverdict: {verdict.summary}"), style="dim")
        return text

    def action_tab(self, tab: str) -> None:
        """Show a tab, and give the focus to what is in it: left on a widget of the tab just
        hidden, the focus would move and TabbedContent would follow it back there."""
        self.query_one(TabbedContent).active = tab
        self.query_one(FOCUS_IN[tab]).focus()

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        line = self.lines[event.option_index]
        timeline = self.query_one("#capture-timeline", Timeline)
        span = self.view.span_of(line.ref) if line.ref is not None else None
        if line.ref is not None and span is not None:
            timeline.reveal(line.ref, *span)


def story_option(line: StoryLine) -> Option:
    """A step: its offset into the capture, the finding's mark if one cites it, what
    happened (the culprit called so), and under it the user's line."""
    text = Text()
    offset = "" if line.kind == OWN_TIME else f"+{format_duration(line.offset)}"
    text.append(f"{offset:>10} ", style="dim")
    mark = FINDING_MARKS.get(line.severity)
    text.append(f"{mark.glyph} " if mark else "  ", style=mark.style if mark else "")
    style = "bold" if line.kind in (BEGIN, END) else "dim" if line.kind == OWN_TIME else ""
    text.append_text(report_text(line.what, "bold bright_red" if line.culprit else style))
    if line.culprit:
        text.append(f" {CULPRIT}", style="bold bright_red")
    if line.where:
        text.append_text(report_text(f"\n{' ' * 13}{line.where}", "cyan"))
    text.append_text(story_code(line, indent=15))
    return Option(text)
