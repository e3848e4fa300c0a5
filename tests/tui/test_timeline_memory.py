"""The memory curve: samples moved by allocations, and its peaks, checked against a walk of
every event on the recorded fixtures."""

from __future__ import annotations

import pytest

from graphdoctor.tui.report_view import ReportView
from graphdoctor.tui.timeline.lanes import MemoryLane, fit_heights
from graphdoctor.tui.timeline.layout import column_edges
from graphdoctor.tui.timeline.memory import BLOCK, MemoryCurve
from tests.reports import report_for


def test_a_sample_moved_by_the_allocations_after_it() -> None:
    curve = MemoryCurve.from_columns([100], [1000], [110, 120, 130],
                                     ["alloc", "free_requested", "free_completed"], [50, 50, 50])
    assert curve.value_at(99) is None
    assert [curve.value_at(t) for t in (100, 110, 125, 130)] == [1000, 1050, 1050, 1000]
    assert curve.peaks([0, 100, 115, 200]) == [None, 1050, 1050]


def test_without_samples_the_lowest_point_counts_as_zero() -> None:
    curve = MemoryCurve.from_columns([], [], [10, 20, 30], ["free_completed", "alloc", "alloc"],
                                     [8, 4, 4])
    assert [curve.value_at(t) for t in (10, 20, 30)] == [0, 4, 8]


def test_wide_columns_use_block_peaks() -> None:
    count = 5 * BLOCK
    sizes = [1] * count
    actions = ["alloc"] * (count // 2) + ["free_completed"] * (count - count // 2)
    curve = MemoryCurve.from_columns([], [], list(range(count)), actions, sizes)
    assert curve.peak(0, count) == count // 2
    assert curve.peak(3, count - 3) == count // 2


def _brute_force_peaks(curve: MemoryCurve, edges: list[int]) -> list[int | None]:
    moments = sorted({*curve.sample_times, *curve.alloc_times})
    peaks = []
    for start, end in zip(edges, edges[1:], strict=False):
        values = [curve.value_at(t) for t in [start, *(t for t in moments if start <= t < end)]]
        known = [v for v in values if v is not None]
        peaks.append(max(known) if known else None)
    return peaks


@pytest.mark.parametrize("name", ["launch_bound", "many_private_pools", "compile_dynamic_shapes"])
@pytest.mark.parametrize("width", [7, 80, 333])
def test_peaks_match_a_walk_of_every_event(name: str, width: int) -> None:
    view = ReportView(report_for(name))
    curve = next(lane for lane in view.lanes if lane.key == "memory").curve  # type: ignore[attr-defined]
    edges = column_edges(view.limits, width)
    assert curve.peaks(edges) == _brute_force_peaks(curve, edges)


def test_a_flat_curve_keeps_three_rows_on_a_tall_screen() -> None:
    steady = MemoryCurve([0, 1_000], [100 * 2**20, 100 * 2**20], [500, 600], [4096, -4096])
    growing = MemoryCurve([0, 1_000], [100 * 2**20, 150 * 2**20], [], [])
    assert steady.flat(1_000) and not growing.flat(1_000)
    flat, rising = (MemoryLane("memory", "Memory", curve=c, flat=c.flat(1_000))
                    for c in (steady, growing))
    fit_heights([flat, rising], spare_rows=30)
    assert (flat.height, rising.height) == (3, 8)


def test_recorded_runs_flat_or_not() -> None:
    def memory(name: str) -> MemoryLane:
        return next(lane for lane in ReportView(report_for(name)).lanes
                    if isinstance(lane, MemoryLane))

    assert memory("launch_bound").flat  # 97.6 MiB from start to end
    assert not memory("memory_growth_replays").flat
