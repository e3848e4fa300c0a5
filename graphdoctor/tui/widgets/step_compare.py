"""One graph's eager step beside its replay, on one time scale, with each step's time over
the run and what happens between replays: the picture that explains the graph's verdict.

The numbers and the words are :mod:`graphdoctor.tui.step_compare.figures`'s; this widget lays them
out: the reading, the aligned bars (drawn again at each resize, to fit the width), one
sparkline per measured series with its range beside it, and the gaps, syncs and input
copies between replays.
"""

from __future__ import annotations

import statistics

from rich.text import Text
from textual.app import ComposeResult
from textual.color import Color
from textual.containers import Horizontal, Vertical
from textual.widgets import Sparkline, Static

from graphdoctor.tui.report_view import ReportView
from graphdoctor.tui.step_compare.draw import (
    bar_lines,
    between_lines,
    drawn,
    series,
    span_text,
)
from graphdoctor.tui.step_compare.figures import (
    Series,
    StepStory,
    notes,
    reading,
    story_for,
)

FALLBACK_WIDTH = 80  # before the first layout gives the widget its width
DIM_SHARE = 0.45  # how strongly a sparkline's smallest values show their colour


def ansi_colour(style: str, alpha: float = 1.0) -> Color:
    """A palette style's colour as the ANSI colour Textual draws ("bold green" -> green)."""
    return Color.parse(f"ansi_{style.split()[-1]}").with_alpha(alpha)


class SeriesRow(Horizontal):
    """One series: its name, its sparkline over the run, and its range. Each column of the
    sparkline is the median of the steps it covers: the typical step, not its one slow
    outlier (the range beside it names the extremes)."""

    def __init__(self, line: Series) -> None:
        super().__init__(classes="step-series")
        self.line = line

    def compose(self) -> ComposeResult:
        yield Static(Text(self.line.label, style=self.line.style), classes="step-series-label")
        yield Sparkline(drawn(self.line.values),
                        min_color=ansi_colour(self.line.style, DIM_SHARE),
                        max_color=ansi_colour(self.line.style),
                        summary_function=statistics.median)
        yield Static(span_text(self.line.values), classes="step-series-span")


class StepCompare(Vertical):
    """The median eager step and the median replay of one graph (the ``graph_index``-th of
    ``rank``'s trace), how each step's time went over the run, and what happens between
    replays; a plain sentence wherever a part was not measured."""

    DEFAULT_CSS = """
    StepCompare { height: auto; }
    StepCompare > Static { height: auto; width: 1fr; }
    StepCompare #step-reading { text-style: bold; }
    StepCompare #step-series-title { margin-top: 1; color: $text-muted; }
    StepCompare SeriesRow { height: 1; }
    StepCompare .step-series-label { width: 13; }
    StepCompare SeriesRow Sparkline { width: 1fr; min-width: 8; }
    StepCompare .step-series-span { width: 40; padding-left: 1; color: $text-muted; }
    StepCompare #step-between { margin-top: 1; }
    """

    def __init__(self, view: ReportView, rank: int, graph_index: int, *,
                 id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.story: StepStory | None = story_for(view, rank, graph_index)

    def compose(self) -> ComposeResult:
        story = self.story
        if story is None:
            yield Static("no such graph in this report", id="step-notes")
            return
        yield Static(self._reading(story), id="step-reading")
        yield Static(id="step-bars")
        measured = series(story)
        if measured:
            yield Static("each step's time, in run order", id="step-series-title")
            for line in measured:
                yield SeriesRow(line)
        yield Static(Text("\n").join(between_lines(story)), id="step-between")

    @staticmethod
    def _reading(story: StepStory) -> Text:
        """The reading, then the sentences for what was not measured."""
        lines = [Text(reading(story))] if reading(story) else []
        lines += [Text(note, style="italic") for note in notes(story)]
        return Text("\n").join(lines)

    def on_mount(self) -> None:
        self._draw_bars()

    def on_resize(self) -> None:
        self._draw_bars()

    def _draw_bars(self) -> None:
        if self.story is None:
            return
        width = self.content_size.width or FALLBACK_WIDTH
        lines = bar_lines(self.story, width)
        bars = self.query_one("#step-bars", Static)
        bars.display = bool(lines)
        bars.update(Text("\n", no_wrap=True, overflow="crop").join(lines))
