"""Numbers as people read them: durations, moments of the run, byte counts.

Pure functions with no Textual import, shared by every screen and by the timeline axis.
"""

from __future__ import annotations

import math

NS_PER_S = 1_000_000_000
_TIME_UNITS = ((NS_PER_S, "s"), (1_000_000, "ms"), (1_000, "µs"), (1, "ns"))
_BYTE_UNITS = ((2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB"))


def significant(value: float, figures: int = 3) -> str:
    """``value`` with about ``figures`` significant digits and no exponent: 1.23, 45.6, 789."""
    if value == 0:
        return "0"
    digits_before_point = int(math.floor(math.log10(abs(value)))) + 1
    decimals = max(0, figures - digits_before_point)
    return f"{value:.{decimals}f}"


def format_duration(ns: float) -> str:
    """A length of time in the largest unit that keeps it at or above one: '1.23 ms'."""
    if ns < 0:
        return "-" + format_duration(-ns)
    for scale, unit in _TIME_UNITS[:-1]:
        # Round first, so 999.7 µs becomes "1.00 ms" rather than "1000 µs".
        rounded = float(significant(ns / scale))
        if rounded >= 1:
            return f"{significant(rounded)} {unit}"
    return f"{round(ns)} ns"


def format_moment(ns: int, step: int = 1_000) -> str:
    """A moment of the run (ns since it started) to the precision ``step`` needs: '3.150 s'."""
    scale, unit = _unit_for(max(abs(ns), step))
    decimals = max(0, math.ceil(math.log10(scale / step))) if step < scale else 0
    return f"{ns / scale:.{decimals}f} {unit}"


def format_offset(ns: int, step: int) -> str:
    """A distance from an axis origin, signed: '+20 µs'."""
    scale, unit = _unit_for(max(abs(ns), step))
    decimals = max(0, math.ceil(math.log10(scale / step))) if step < scale else 0
    sign = "+" if ns >= 0 else "-"
    return f"{sign}{abs(ns) / scale:.{decimals}f} {unit}"


def _unit_for(ns: int) -> tuple[int, str]:
    for scale, unit in _TIME_UNITS:
        if ns >= scale:
            return scale, unit
    return 1, "ns"


def format_bytes(size: float) -> str:
    """Bytes in binary units with three significant figures: '35.0 MiB', '512 B'."""
    if size < 0:
        return "-" + format_bytes(-size)
    for scale, unit in _BYTE_UNITS:
        if size >= scale:
            return f"{significant(size / scale)} {unit}"
    return f"{int(size)} B"


def format_count(count: int) -> str:
    """An integer with thousands separators: '1,000,004'."""
    return f"{count:,}"


def counted(count: int, noun: str, plural: str = "") -> str:
    """'1 graph', '2 graphs', '1,000 replays'."""
    return f"{format_count(count)} {noun if count == 1 else plural or noun + 's'}"


def format_speedup(speedup: float | None) -> str:
    """'5.70×' faster or '0.98×' (slower); an em dash when it was not measured."""
    return "—" if speedup is None else f"{significant(speedup)}×"
