"""Where the timeline's zoom-to keys go: a time or a range typed as people write them
(``1.20s-1.21s``, ``+500us``), and the spans a key steps through (each graph's captures,
each replay on the GPU). Pure; no Textual.

A person reading a four-second run at 80 columns sees 50 ms a column; the replay they
care about lasts 20 µs. Halving the window takes a dozen presses to get there; these
take one: the span is framed whole, with a margin (:func:`~.view.framed`).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from graphdoctor.tui.timeline.lanes import Lane
from graphdoctor.tui.timeline.layout import Window
from graphdoctor.tui.timeline.ranks import unranked_key
from graphdoctor.units import NS_PER_S, format_moment

UNITS = {"s": NS_PER_S, "ms": 1_000_000, "us": 1_000, "µs": 1_000, "μs": 1_000, "ns": 1}
_MOMENT = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*(s|ms|us|µs|μs|ns)?\s*$")
_RANGE = re.compile(r"^(.*?\S)\s*(?:-|\.\.|to)\s*(\+?.*)$")
EXAMPLES = "1.20s-1.21s, 3.2ms, +500us"
CAPTURES, REPLAYS = "capture", "replay"
Span = tuple[int, int]


class TypedTimeError(ValueError):
    """What was typed reads as no time or range; ``str()`` says how to write one."""


def parse_duration(text: str, unit: str = "") -> tuple[int, str]:
    """``"500us"`` → (500_000, "us"); a number without a unit takes ``unit`` (else s)."""
    found = _MOMENT.match(text)
    if found is None:
        raise TypedTimeError(f"{text.strip()!r} is not a time; write one as {EXAMPLES}")
    unit = found.group(2) or unit or "s"
    return round(float(found.group(1)) * UNITS[unit]), unit


def typed_window(text: str, cursor: int, window: Window, limits: Window) -> tuple[Window, int]:
    """The window, and the cursor, that what was typed asks for:

    - ``A-B`` (or ``A..B``, ``A to B``): from A to B, B also ``+D`` (D after A);
    - ``+D``: D from the cursor;
    - ``A``: the moment A, in the middle, at the same zoom.

    A number takes the unit of the other end of its range, else seconds."""
    text = text.strip()
    if text.startswith("+"):
        length, _ = parse_duration(text[1:])
        return _inside(Window(cursor, cursor + length), limits), cursor
    ranged = _RANGE.match(text)
    if ranged is None:
        moment, _ = parse_duration(text)
        return window.around(moment, window.span, limits), _within(moment, limits)
    first, second = ranged.group(1), ranged.group(2).strip()
    relative = second.startswith("+")
    end, unit = parse_duration(second.removeprefix("+"))
    start, _ = parse_duration(first, unit)
    end = start + end if relative else end
    if end <= start:
        raise TypedTimeError(f"{text!r} ends before it starts")
    return _inside(Window(start, end), limits), _within(start, limits)


def _inside(wanted: Window, limits: Window) -> Window:
    if wanted.start >= limits.end or wanted.end <= limits.start:
        raise TypedTimeError(f"that is outside the run, which the axis shows from "
                             f"{format_moment(limits.start)} to {format_moment(limits.end)}")
    return Window(max(wanted.start, limits.start), min(wanted.end, limits.end))


def _within(t: int, limits: Window) -> int:
    return min(max(t, limits.start), limits.end - 1)


@dataclass(frozen=True)
class Spans:
    """Spans of one sort (captures, or replays on the GPU), each with the lane that draws
    it, in time order."""

    starts: list[int]
    ends: list[int]
    lanes: list[int]

    def __len__(self) -> int:
        return len(self.starts)

    def step(self, cursor: int, window: Window, forward: bool) -> int | None:
        """The span to go to from ``cursor``: the one it is in, unless the window already
        frames that one; else the next (or previous) one. None past the last (first)."""
        at = bisect_right(self.starts, cursor) - 1
        inside = at >= 0 and self.ends[at] > cursor
        framed = inside and window.start <= self.starts[at] and self.ends[at] <= window.end \
            and (self.ends[at] - self.starts[at]) * 2 >= window.span
        if inside and not framed:
            return at
        index = at + 1 if forward else (at - 1 if inside else at)
        return index if 0 <= index < len(self) else None


def spans(lanes: Sequence[Lane], sort: str, rank: int) -> Spans:
    """Every capture (``sort`` CAPTURES) or replay on the GPU (REPLAYS) that the lanes of
    ``rank`` draw: on the stream lanes, where each is drawn as it ran."""
    found: list[tuple[int, int, int]] = []
    for index, lane in enumerate(lanes):
        if lane.rank != rank or not _is_stream(lane):
            continue
        for series in lane.series:
            if series.ends is not None and _of_sort(series.source, series.name, sort):
                found += [(t, end, index) for t, end in zip(series.times, series.ends,
                                                            strict=True)]
    found.sort()
    return Spans([t for t, _, _ in found], [max(end, t + 1) for t, end, _ in found],
                 [lane for _, _, lane in found])


def _is_stream(lane: Lane) -> bool:
    return unranked_key(lane).startswith("stream:")


def _of_sort(source: str, name: str, sort: str) -> bool:
    if sort == CAPTURES:
        return source == "graphs"
    return source == "replays" and "GPU" in name
