"""How one graph's eager step and replay are drawn: the aligned bars, the per-step series
and the lines about what happens between replays, from a
:class:`~graphdoctor.tui.step_compare.figures.StepStory`. Pure; no Textual import.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from rich.text import Text

from graphdoctor.diagnose.measure import (
    GPU,
    HOST,
)
from graphdoctor.trace.names import CUPTI_APIS
from graphdoctor.tui.palette import REPLAY_GPU, REPLAY_HOST
from graphdoctor.tui.step_compare.figures import (
    CUPTI_GPU_NOTE,
    EAGER_SIDE,
    EAGER_STYLE,
    GAP_STYLE,
    GPU_NOTE,
    REPLAY_SIDE,
    STALL_FACTOR,
    STALL_MIN_SAMPLES,
    Sample,
    Series,
    StepStory,
    median_ns,
)
from graphdoctor.units import counted, format_bytes, format_duration

# -- the aligned bars ------------------------------------------------------------------

LABEL_WIDTH = len(EAGER_SIDE) + 2
KIND_WIDTH = 5  # "host " / "GPU  "
VALUE_WIDTH = 14  # " not measured"
MIN_BAR = 10
EIGHTHS = " ▏▎▍▌▋▊▉"


@dataclass(frozen=True)
class Bar:
    """One row of the picture: a side's host or GPU median (ns; None where there is none,
    ``missing`` then saying why)."""

    side: str
    kind: str
    ns: float | None
    style: str
    missing: str = "not measured"


def bars(story: StepStory) -> list[Bar]:
    """The four rows: eager host and GPU, replay host and GPU."""
    m = story.measurement
    eager_missing = "not timed" if m.eager is None and m.eager_host is None else "not measured"
    return [Bar(EAGER_SIDE, HOST, median_ns(m.eager_host), EAGER_STYLE, eager_missing),
            Bar("", GPU, median_ns(m.eager), EAGER_STYLE, eager_missing),
            Bar(REPLAY_SIDE, HOST, median_ns(m.replay_host), REPLAY_HOST.style),
            Bar("", GPU, median_ns(m.replay), REPLAY_GPU.style)]


def bar_lines(story: StepStory, width: int) -> list[Text]:
    """The median eager step and the median replay on one time scale, ``width`` columns
    wide; none where neither was measured (:func:`notes` says why)."""
    rows = bars(story)
    scale = max((row.ns for row in rows if row.ns), default=0.0)
    if story.failed or not scale:
        return []
    bar_width = max(MIN_BAR, width - LABEL_WIDTH - KIND_WIDTH - VALUE_WIDTH)
    lines = [_bar_line(row, scale, bar_width) for row in rows]
    note = CUPTI_GPU_NOTE if story.graph.api.startswith(CUPTI_APIS) else GPU_NOTE
    return [*lines, _axis(scale, bar_width), Text(note, style="dim")]


def bar_cells(ns: float, scale: float, width: int) -> str:
    """A bar of ``ns`` where ``scale`` fills ``width`` cells, to an eighth of a cell; a
    sliver for any time too short for one eighth, so a measured time never vanishes."""
    eighths = round(ns / scale * width * 8) if scale > 0 else 0
    if ns > 0 and eighths == 0:
        eighths = 1
    full, part = divmod(min(eighths, width * 8), 8)
    return "█" * full + (EIGHTHS[part] if part else "")


def _bar_line(row: Bar, scale: float, bar_width: int) -> Text:
    line = Text(row.side.ljust(LABEL_WIDTH), style=f"bold {row.style}" if row.side else "")
    line.append(row.kind.ljust(KIND_WIDTH))
    cells = "" if row.ns is None else bar_cells(row.ns, scale, bar_width)
    line.append(cells, style=row.style)
    value = row.missing if row.ns is None else format_duration(row.ns)
    line.append(" " * (bar_width - len(cells)) + value.rjust(VALUE_WIDTH))
    return line


def _axis(scale: float, bar_width: int) -> Text:
    """Where the calls start (0) and what a full bar is."""
    end = format_duration(scale)
    ticks = "0" + " " * max(1, bar_width - 1 - len(end)) + end
    return Text(" " * (LABEL_WIDTH + KIND_WIDTH) + ticks, style="dim")


# -- series and what happens between replays ------------------------------------------


def series(story: StepStory) -> list[Series]:
    """The per-step series that were measured: eager host and GPU, replay host and GPU,
    and the gaps between replays."""
    found = [Series("eager host", _column(story.eager, 0), EAGER_STYLE),
             Series("eager GPU", _column(story.eager, 1), EAGER_STYLE),
             Series("replay host", _column(story.replays, 0), REPLAY_HOST.style),
             Series("replay GPU", _column(story.replays, 1), REPLAY_GPU.style),
             Series("replay gaps", story.gaps, GAP_STYLE)]
    return [s for s in found if s.values]


def _column(samples: tuple[Sample, ...], index: int) -> tuple[int, ...]:
    return tuple(sample[index] for sample in samples if sample[index] >= 0)


def drawn_to(values: tuple[int, ...]) -> int | None:
    """Where a sparkline of ``values`` is cut off: at the 95th percentile when the largest
    value is a stall of more than twice that (one 7 s stall among 6 ms replays would
    otherwise flatten every other step to the floor); None to draw them all."""
    if len(values) < STALL_MIN_SAMPLES:
        return None
    p95 = sorted(values)[int(0.95 * (len(values) - 1))]
    return p95 if max(values) > STALL_FACTOR * p95 else None


def drawn(values: tuple[int, ...]) -> list[float]:
    """The values a sparkline draws: each one, cut off where :func:`drawn_to` says."""
    top = drawn_to(values)
    return [float(v if top is None else min(v, top)) for v in values]


def span_text(values: tuple[int, ...]) -> str:
    """A series' smallest and largest value, and where its sparkline is cut off."""
    if not values:
        return "not measured"
    span = f"{format_duration(min(values))} – {format_duration(max(values))}"
    top = drawn_to(values)
    return span if top is None else f"{span}, drawn to p95 {format_duration(top)}"


def between_lines(story: StepStory) -> list[Text]:
    """Gaps, syncs and input copies between replays; nothing where there are no two
    replays to be between."""
    if not story.gaps:
        return _copies(story)
    return [_gap_line(story), _sync_line_text(story), *_copies(story)]


def _gap_line(story: StepStory) -> Text:
    median = statistics.median(story.gaps)
    return Text(f"gap between replays: median {format_duration(median)} of host time from "
                f"one replay's end to the next one's start ({counted(len(story.gaps), 'gap')})")


def _sync_line_text(story: StepStory) -> Text:
    if not story.syncs:
        return Text("no syncs between replays")
    sources = ", ".join(f"{s.where} ({s.count})" for s in story.sync_sources)
    line = Text(f"{counted(story.syncs, 'sync')} between replays", style="yellow")
    line.append(f", from {sources}" if sources else "")
    return line


def _copies(story: StepStory) -> list[Text]:
    if not story.compiled:
        return []
    if not story.copied_inputs:
        return [Text("no input copies recorded before replays")]
    return [Text(f"each replay first copies {counted(story.copied_inputs, 'input')} "
                 f"({format_bytes(story.copied_bytes)}) into the graph")]
