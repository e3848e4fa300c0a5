"""A verdict's measurements read back from a report (measure_read_back.from_dict): the figures the
viewer shows are the verdict's own, and a report from elsewhere cannot break them."""

from __future__ import annotations

from typing import Any

import pytest

from graphdoctor.diagnose import measure_read_back
from graphdoctor.diagnose.measure import BASELINE_RUN, SAME_RUN, Measurement
from tests.reports import report_for, scenario_names

FIGURES = ("replay", "replay_host", "eager", "eager_host")


@pytest.mark.parametrize("name", scenario_names())
def test_every_verdicts_medians_and_counts_read_back_as_they_were_written(name: str) -> None:
    for verdict in report_for(name).diagnosis.verdicts:
        if not verdict.measurements:
            continue
        again = measure_read_back.from_dict(verdict.measurements).as_dict()
        for key in (*FIGURES, "replays", "not_covered", "eager_source", "basis", "eager_of"):
            assert again.get(key) == verdict.measurements.get(key), (verdict.subject, key)


def test_a_figure_that_is_missing_or_malformed_reads_as_not_measured() -> None:
    hostile: dict[str, Any] = {
        "replay": {"median_us": "1", "p25_us": 1, "p75_us": 1, "n": 3},
        "replay_host": {"median_us": -1.0, "p25_us": 1, "p75_us": 1, "n": 3},
        "eager": {"median_us": float("nan"), "p25_us": 1, "p75_us": 1, "n": 3},
        "eager_host": {"median_us": 2.0, "p25_us": 1.0, "p75_us": 3.0, "n": True},
        "replays": -4, "not_covered": "aten.mm", "eager_source": 7, "around": [1]}
    assert measure_read_back.from_dict(hostile) == Measurement(None, None, None, None, 0)


def test_an_older_stat_without_p95_and_a_baseline_source_read_back() -> None:
    written = {"eager": {"median_us": 2.0, "p25_us": 1.0, "p75_us": 3.0, "n": 5},
               "eager_source": BASELINE_RUN, "replays": 9,
               "around": {"replays": 2, "basis": "step"}}
    m = measure_read_back.from_dict(written)
    assert m.eager is not None and m.eager.p95_us == 0.0 and m.eager.n == 5
    assert m.eager_source == BASELINE_RUN and m.replays == 9
    assert m.around is not None and m.around.replays == 2 and m.around.eager_source == SAME_RUN
