"""A verdict's measurements read back from a report (:meth:`.measure.Measurement.as_dict`
wrote them), so a reader shows the verdict's own figures instead of measuring again."""

from __future__ import annotations

from typing import Any

from graphdoctor.diagnose import read_back
from graphdoctor.diagnose.measure import REPLAYS, SAME_RUN, Measurement, Stat


def from_dict(data: dict[str, Any]) -> Measurement:
    """The measurement a verdict's ``measurements`` hold (:meth:`Measurement.as_dict`), read
    back so a reader shows the verdict's own figures instead of measuring again. A report
    is a file from elsewhere: a figure missing or malformed reads as not measured."""
    around = data.get("around")
    return Measurement(
        _stat_from(data.get("replay")), _stat_from(data.get("replay_host")),
        _stat_from(data.get("eager")), _stat_from(data.get("eager_host")),
        read_back.count(data.get(REPLAYS)) or 0,
        not_covered=read_back.names(data.get("not_covered")),
        eager_source=read_back.text(data.get("eager_source")) or SAME_RUN,
        basis=read_back.text(data.get("basis")), eager_of=read_back.text(data.get("eager_of")),
        around=from_dict(around) if isinstance(around, dict) else None,
        replay_lone=_stat_from(data.get("replay_lone")))


def _stat_from(value: Any) -> Stat | None:
    """A :class:`Stat` as :meth:`Stat.as_dict` wrote it (p95 came later: 0 when absent; the
    low and high samples later still: the median when absent)."""
    if not isinstance(value, dict):
        return None
    n = read_back.count(value.get("n"))
    median, p25, p75 = (read_back.figure(value.get(name))
                        for name in ("median_us", "p25_us", "p75_us"))
    p95 = read_back.figure(value.get("p95_us", 0.0))
    low, high = (read_back.figure(value.get(name, median)) for name in ("low_us", "high_us"))
    if n is None or median is None or p25 is None or p75 is None or p95 is None \
            or low is None or high is None:
        return None
    return Stat(median, p25, p75, n, p95, low, high)
