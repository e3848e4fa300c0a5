"""GD212 replay-outlier on GPU recordings: a replay held far beyond its graph's others is
named with what happened meanwhile; a graph's first replay (its upload), a launch waiting
for a busy GPU and the steady replays of every other recording are not."""

from __future__ import annotations

import dataclasses

import pytest

from graphdoctor.diagnose.rules import gd212_replay_outlier
from graphdoctor.diagnose.view import TraceView
from graphdoctor.trace.event_kinds import Table
from graphdoctor.trace.model import Trace
from tests.reports import scenario_names, scenario_params, trace_for

FOUND = {"dist_healthy_capture", "dist_pipeline_p2p_capture", "host_node_in_capture"}


def outliers(trace: Trace) -> list[gd212_replay_outlier.Finding]:
    return list(gd212_replay_outlier.check(TraceView(trace)))


@pytest.mark.parametrize("name", scenario_params(scenario_names()))
def test_only_the_recordings_with_a_held_replay_have_one(name: str) -> None:
    assert bool(outliers(trace_for(name))) == (name in FOUND)


def test_the_held_replay_is_named_beside_the_medians() -> None:
    [found] = outliers(trace_for("host_node_in_capture"))
    assert found.title == ("replay 1547 of graph 0 took 32.8 µs on the host and 2.21 ms on "
                           "the GPU, against medians of 115 µs and 131 µs (2 replays of 2500 "
                           "so slow)")
    assert [e.kind for e in found.evidence] == ["replays", "replays"]
    assert found.measurements["gpu_ns"] > 10 * found.measurements["median_gpu_ns"]


def with_replay(trace: Trace, index: int, **changed: int) -> Trace:
    """The trace with one replay's times changed, as a recording might have held them."""
    rows = list(trace.tables["replays"])
    rows[index] = rows[index]._replace(**changed)
    table = Table(type(rows[0]))
    for row in rows:
        table.append(row)
    return dataclasses.replace(trace, tables={**trace.tables, "replays": table})


def test_what_happened_meanwhile_is_said() -> None:
    trace = trace_for("gpu_bound")
    gc = trace.tables["gc_pauses"][0]
    held = with_replay(trace, 5, t=gc.t - 1_000, dur=3_000_000_000, gpu=3_000_000_000)
    [found] = outliers(held)
    assert found.title.startswith("replay 6 of graph 0 took 3 s on the host and 3 s on the GPU")
    assert "garbage collection" in found.explanation


def test_the_first_replay_and_a_launch_waiting_on_a_busy_gpu_are_not_outliers() -> None:
    trace = trace_for("gpu_bound")  # 6.4 ms of GPU per replay, 30 µs of host
    first = with_replay(trace, 0, dur=50_000_000, gpu=50_000_000)
    waiting = with_replay(trace, 7, dur=10_000_000)  # under two GPU steps on the host
    assert outliers(first) == [] and outliers(waiting) == []
    assert outliers(with_replay(trace, 7, dur=40_000_000)) != []
