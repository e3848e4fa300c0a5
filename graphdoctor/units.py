"""Numbers as people read them: durations, byte counts, speedups, counts, and the moments
of a run on the viewer's time axis.

One module for every reader, so the text and markdown reports and the viewer print one
figure the same way. The wording is the reports' (what committed reports already say):
three significant figures with trailing zeros dropped for a duration (``1.2 ms``), one
decimal for a byte count past a KiB (``8.0 KiB``), two for a speedup (``5.70×``), and "-"
for a figure that was not measured. It sits outside the stages (trace, diagnose, report,
tui) because all of them print numbers; it imports nothing of graphdoctor's.
"""

from __future__ import annotations

import math

NOT_MEASURED = "-"
NOT_MEASURED_WORDS = "not measured"  # in a sentence, where a table says NOT_MEASURED
NS_PER_S = 1_000_000_000
_DURATION_UNITS = ((NS_PER_S, "s"), (1_000_000, "ms"), (1_000, "µs"))
_AXIS_UNITS = (*_DURATION_UNITS, (1, "ns"))
_BYTE_UNITS = ("B", "KiB", "MiB", "GiB")


def format_duration(ns: float | None) -> str:
    """A length of time to three significant figures in the largest unit that keeps it at
    or above one: ``1.23 ms``, ``1.2 ms``, ``686 µs``, ``45 ns``; "-" when it was not
    measured (None, or negative: the recorder's "not timed")."""
    if ns is None or ns < 0:
        return NOT_MEASURED
    for scale, unit in _DURATION_UNITS:
        # Rounded first, so 999.7 µs is "1 ms", never "1e+03 µs".
        figures = f"{ns / scale:.3g}"
        if float(figures) >= 1:
            return f"{_without_exponent(figures, ns / scale)} {unit}"
    return f"{round(ns)} ns"


def _without_exponent(figures: str, value: float) -> str:
    """Three figures of a value of 1,000 or more are written with an exponent: the whole
    number is written instead (``1,234 s``)."""
    return f"{round(value):,}" if "e" in figures else figures


def format_bytes(count: float) -> str:
    """A byte count in binary units, to one decimal past a KiB: ``512 B``, ``8.0 KiB``."""
    size = float(count)
    for unit in _BYTE_UNITS:
        if abs(size) < 1024:
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"


def format_speedup(speedup: float | None) -> str:
    """``5.70×`` (faster) or ``0.98×`` (slower); "-" when it was not measured."""
    return NOT_MEASURED if speedup is None else f"{speedup:.2f}×"


def speedup_spellings(speedup: float) -> tuple[str, str]:
    """How a summary may spell the speedup: as :func:`format_speedup` does, or ``5.70x`` as
    older reports did."""
    return format_speedup(speedup), f"{speedup:.2f}x"


def format_count(count: int) -> str:
    """An integer with thousands separators: ``1,000,004``."""
    return f"{count:,}"


def counted(count: int, noun: str, plural: str = "") -> str:
    """``1 graph``, ``2 graphs``, ``1,000 replays``; ``plural`` where adding an s is wrong."""
    return f"{format_count(count)} {noun if count == 1 else plural or noun + 's'}"


# -- the viewer's time axis: moments of the run, to the precision a step needs -----------
def format_moment(ns: int, step: int = 1_000) -> str:
    """A moment of the run (ns since it started) to the precision ``step`` needs:
    ``3.150 s``."""
    scale, unit = _axis_unit(max(abs(ns), step))
    return f"{ns / scale:.{_decimals(scale, step)}f} {unit}"


def format_offset(ns: int, step: int) -> str:
    """A distance from an axis origin, signed: ``+20 µs``."""
    scale, unit = _axis_unit(max(abs(ns), step))
    sign = "+" if ns >= 0 else "-"
    return f"{sign}{abs(ns) / scale:.{_decimals(scale, step)}f} {unit}"


def _decimals(scale: int, step: int) -> int:
    """The decimals of ``scale`` units that tell moments ``step`` apart."""
    return max(0, math.ceil(math.log10(scale / step))) if step < scale else 0


def _axis_unit(ns: int) -> tuple[int, str]:
    for scale, unit in _AXIS_UNITS:
        if ns >= scale:
            return scale, unit
    return 1, "ns"
