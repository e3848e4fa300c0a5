"""The timeline's geometry as pure functions: the visible window of time, which moments each
column covers, where the axis ticks go, and how cells become text.

No Textual import, so zoom, pan, clipping and axis labels are tested as plain strings.
Times are integer nanoseconds since the run started, as in the trace.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from graphdoctor.units import format_moment, format_offset

Cell = tuple[str, str]
"""One terminal cell of a lane: its glyph and a Rich style (ANSI colour names only)."""

BLANK: Cell = (" ", "")
SHADES = "░▒▓█"
LEVELS = " ▁▂▃▄▅▆▇█"
MIN_SPAN_NS = 100  # finer than this the recorded clocks have nothing more to show
NICE_STEPS = (1, 2, 5)


@dataclass(frozen=True)
class Window:
    """The stretch of the run on screen: [start, end) in ns."""

    start: int
    end: int

    @property
    def span(self) -> int:
        return self.end - self.start

    def zoomed(self, factor: float, anchor: int, limits: Window) -> Window:
        """Scaled by ``factor`` (< 1 zooms in) with ``anchor`` kept at the same column."""
        span = min(max(round(self.span * factor), MIN_SPAN_NS), limits.span)
        share_left = (anchor - self.start) / self.span if self.span else 0.5
        start = anchor - round(span * share_left)
        return Window(start, start + span).clamped(limits)

    def panned(self, delta: int, limits: Window) -> Window:
        return Window(self.start + delta, self.end + delta).clamped(limits)

    def around(self, t: int, span: int, limits: Window) -> Window:
        """A window of ``span`` centred on ``t``."""
        span = min(max(span, MIN_SPAN_NS), limits.span)
        return Window(t - span // 2, t - span // 2 + span).clamped(limits)

    def clamped(self, limits: Window) -> Window:
        """Moved (never stretched beyond ``limits``) so that it lies inside ``limits``."""
        span = min(self.span, limits.span)
        start = min(max(self.start, limits.start), limits.end - span)
        return Window(start, start + span)

    def contains(self, t: int) -> bool:
        return self.start <= t < self.end


def run_window(end: int) -> Window:
    """The whole run, never shorter than the finest zoom."""
    return Window(0, max(end, MIN_SPAN_NS))


def column_edges(window: Window, width: int) -> list[int]:
    """``width + 1`` moments: column ``c`` covers ``[edges[c], edges[c + 1])``."""
    start, span = window.start, window.span
    return [start + span * column // width for column in range(width + 1)]


def column_of(window: Window, width: int, t: int) -> int:
    """The column showing ``t``; outside ``0..width-1`` when ``t`` is off screen."""
    return (t - window.start) * width // window.span if window.span else 0


def time_of(window: Window, width: int, column: int) -> int:
    """The moment at the middle of ``column``."""
    return window.start + (window.span * (2 * column + 1)) // (2 * width)


# -- the time axis --------------------------------------------------------------------------
@dataclass(frozen=True)
class Tick:
    column: int
    label: str


@dataclass(frozen=True)
class Axis:
    """Tick labels are absolute times, or offsets from ``origin`` when those would be long."""

    origin: str
    ticks: tuple[Tick, ...]
    step: int


def nice_step(raw: float) -> int:
    """The smallest 1, 2 or 5 times a power of ten that is at least ``raw`` (in ns)."""
    magnitude = 1
    while True:
        for multiple in NICE_STEPS:
            if multiple * magnitude >= raw:
                return multiple * magnitude
        magnitude *= 10


def axis(window: Window, width: int, min_gap: int = 12) -> Axis:
    """Ticks at round times, at least ``min_gap`` columns apart, labelled with units."""
    step = nice_step(window.span * min_gap / max(width, 1))
    first = -(-window.start // step) * step
    times = range(first, window.end, step)
    labels = [format_moment(t, step) for t in times]
    if all(len(label) < min_gap for label in labels):
        return Axis("time", _ticks(window, width, times, labels), step)
    origin = first - step
    offsets = [format_offset(t - origin, step) for t in times]
    return Axis(format_moment(origin, step), _ticks(window, width, times, offsets), step)


def _ticks(window: Window, width: int, times: range, labels: list[str]) -> tuple[Tick, ...]:
    return tuple(Tick(column_of(window, width, t), label)
                 for t, label in zip(times, labels, strict=True))


def axis_text(axis: Axis, width: int) -> str:
    """The axis as one line: a ``╷`` at each tick followed by its label, never overlapping."""
    line = [" "] * width
    free_from = 0
    for tick in axis.ticks:
        text = "╷" + tick.label
        if tick.column < free_from or tick.column + len(text) > width:
            continue
        line[tick.column:tick.column + len(text)] = text
        free_from = tick.column + len(text) + 1
    return "".join(line)


# -- cells ----------------------------------------------------------------------------------
def shade(fraction: float) -> str:
    """How much of a column a span covers, as ░ ▒ ▓ █ (anything above zero shows)."""
    index = min(len(SHADES) - 1, int(fraction * len(SHADES)))
    return SHADES[max(index, 0)]


def level(fraction: float) -> str:
    """A bar height from 0 to 1 as one of `` ▁▂▃▄▅▆▇█``."""
    return LEVELS[min(len(LEVELS) - 1, max(0, round(fraction * (len(LEVELS) - 1))))]


def bar_rows(fractions: Sequence[float | None], height: int, style: str) -> list[list[Cell]]:
    """A bar chart ``height`` rows tall, top row first; ``None`` columns stay blank."""
    rows: list[list[Cell]] = [[BLANK] * len(fractions) for _ in range(height)]
    eighths = len(LEVELS) - 1
    for column, fraction in enumerate(fractions):
        if fraction is None:
            continue
        filled = max(1, round(fraction * height * eighths))  # a measured zero shows as ▁
        for from_bottom in range(height):
            part = min(eighths, max(0, filled - from_bottom * eighths))
            if part:
                rows[height - 1 - from_bottom][column] = (LEVELS[part], style)
    return rows


def overlay_labels(cells: list[Cell], keys: Sequence[str | None],
                   labels: dict[str, str]) -> list[Cell]:
    """Write ``labels[key]`` centred into each run of columns with the same key, when it
    fits with a margin; cut with … in a narrower run, and its initial in one too short
    for that."""
    out = list(cells)
    for start, end, key in key_runs(keys):
        text = labels.get(key or "", "")
        if text:
            _write_label(out, start, end, text)
    return out


def key_runs(keys: Sequence[str | None]) -> Iterator[tuple[int, int, str | None]]:
    """(start, end, key) of each run of columns with one key, left to right."""
    column = 0
    while column < len(keys):
        key, run_end = keys[column], column
        while run_end < len(keys) and keys[run_end] == key:
            run_end += 1
        yield column, run_end, key
        column = run_end


def _write_label(cells: list[Cell], start: int, end: int, text: str) -> None:
    length = end - start
    if length < len(text) + 2:  # cut to the run with a margin, or its initial in a short one
        text = _fitted(text, length) or text[0].upper()
    offset = start + (length - len(text)) // 2
    for index, char in enumerate(text):
        cells[offset + index] = (char, cells[offset + index][1])


def write_labels(cells: list[Cell], keys: Sequence[str | None],
                 labels: dict[str, str]) -> list[Cell]:
    """Write ``labels[key]`` into each run of columns of one key, cut with … where the run is
    shorter, nothing where it is under :data:`LABEL_FROM` columns; letters in black on the
    run's colour, so the bar still shows around and behind them."""
    out = list(cells)
    for start, end, key in key_runs(keys):
        text = _fitted(labels.get(key or "", ""), end - start)
        for index, char in enumerate(text, start=start + 1):
            out[index] = (char, _on_colour(out[index][1]))
    return out


LABEL_FROM = 4  # columns a run needs for a label: a letter, an ellipsis, a margin each side


def _fitted(text: str, length: int) -> str:
    if length < LABEL_FROM or not text:
        return ""
    room = length - 2
    return text if len(text) <= room else text[:room - 1] + "…"


def _on_colour(style: str) -> str:
    """``bold blue`` → ``bold black on blue``: a letter written over a coloured bar."""
    *attributes, colour = style.split() or ["white"]
    return " ".join([*attributes, "black", "on", colour])


def fit_label(text: str, width: int) -> str:
    """``text`` in ``width`` columns: cut in the middle where it is longer, so both the
    name's start and its end (a line number, a stream's role) stay."""
    if len(text) <= width:
        return text
    if width < 3:
        return text[:width]
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head):]


def with_cursor(cells: list[Cell], column: int) -> list[Cell]:
    """The cursor column shown in reverse video, which reads in any terminal."""
    if not 0 <= column < len(cells):
        return cells
    glyph, style = cells[column]
    out = list(cells)
    out[column] = (glyph, f"{style} reverse".strip())
    return out


def cells_text(cells: Sequence[Cell]) -> str:
    """The glyphs alone, for tests and plain output."""
    return "".join(glyph for glyph, _ in cells)
