"""Plain values read back from a report, a file from elsewhere: each reader gives the value
where it is what it should be, and None or empty where it is not (never an exception)."""

from __future__ import annotations

from typing import Any


def figure(value: Any) -> float | None:
    """A non-negative number as a float; None for anything else (NaN included)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        return None
    return float(value)


def count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 \
        else None


def names(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


def text(value: Any) -> str:
    return value if isinstance(value, str) else ""
