"""The curves' lanes read as charts: memory from zero to the window's high, labelled with
both ends and with what it measures; GPU utilisation on a 0-100% scale that holds each
reading until the next, so zooming in between readings never blanks the lane."""

from __future__ import annotations

import pytest

from graphdoctor.demo import load_demo
from graphdoctor.tui.palette import OTHER_EVENT
from graphdoctor.tui.report_view import ReportView
from graphdoctor.tui.timeline.lanes import LaneRow, MemoryLane, UtilisationLane
from graphdoctor.tui.timeline.layout import LEVELS, Window, cells_text, column_edges
from graphdoctor.tui.timeline.memory import MemoryCurve
from graphdoctor.tui.timeline.series import Series
from graphdoctor.units import format_bytes

KIB = 1024
WIDTH = 40


def eighths(rows: list[LaneRow], column: int) -> int:
    """How tall the bar in ``column`` is, in eighths of a row."""
    return sum(LEVELS.index(cells[column][0]) for _, cells in rows)


def rising_memory(height: int) -> MemoryLane:
    """8.02 KiB allocated from t=0, 12.0 KiB from t=500: a rise of half."""
    curve = MemoryCurve.from_columns([0], [round(8.02 * KIB)], [500], ["alloc"],
                                     [round(12.0 * KIB) - round(8.02 * KIB)])
    return MemoryLane("memory", "Memory", curve=curve, height=height)


@pytest.mark.parametrize("height", [3, 5, 8])
def test_memory_bars_start_at_zero_so_a_rise_of_half_reads_as_one(height: int) -> None:
    rows = rising_memory(height).rows(column_edges(Window(0, 1000), WIDTH))
    before, after = eighths(rows, 0), eighths(rows, WIDTH - 1)
    assert after == height * 8  # the window's high fills the lane
    assert before / after == pytest.approx(8.02 / 12.0, abs=1 / (height * 8))


def test_memory_labels_are_the_high_zero_and_allocated() -> None:
    tall = [label for label, _ in rising_memory(5).rows(column_edges(Window(0, 1000), WIDTH))]
    assert tall == ["12.0 KiB", "Memory", "allocated", "", "0 B"]
    short = [label for label, _ in rising_memory(3).rows(column_edges(Window(0, 1000), WIDTH))]
    assert short == ["12.0 KiB", "allocated", "0 B"]


def test_the_high_is_the_window_s_own() -> None:
    lane = rising_memory(3)
    rows = lane.rows(column_edges(Window(0, 400), WIDTH))  # before the rise
    assert rows[0][0] == format_bytes(round(8.02 * KIB)) and rows[-1][0] == "0 B"
    assert eighths(rows, 0) == 3 * 8  # flat: full, not the half height of "unchanged"


def test_a_rank_s_memory_lane_says_its_rank_when_short() -> None:
    lane = rising_memory(3)
    lane.rank, lane.label = 1, "r1 Memory"
    labels = [label for label, _ in lane.rows(column_edges(Window(0, 1000), WIDTH))]
    assert labels[1] == "r1 allocated"


def test_the_recorded_memory_lane_is_scaled_to_its_peak() -> None:
    view = ReportView(load_demo("launch_bound"))
    lane = next(lane for lane in view.lanes if isinstance(lane, MemoryLane))
    edges = column_edges(view.limits, WIDTH)
    high = max(p for p in lane.curve.peaks(edges) if p is not None)
    rows = lane.rows(edges)
    assert [rows[0][0], rows[1][0], rows[-1][0]] == [format_bytes(high), "allocated", "0 B"]


# -- GPU utilisation -------------------------------------------------------------------------
def utilisation(height: int = 3, run_end: int | None = None) -> UtilisationLane:
    """Readings of 50% at t=100 and 80% at t=200."""
    readings = Series("gpu_samples", "GPU reading", OTHER_EVENT, [100, 200])
    return UtilisationLane("gpu:0", "GPU0 util", [readings], height=height, readings=readings,
                           values=[50, 80], run_end=run_end)


def levels(lane: UtilisationLane, window: Window) -> set[int]:
    rows = lane.rows(column_edges(window, WIDTH))
    return {eighths(rows, column) for column in range(WIDTH)}


def test_a_window_between_two_readings_holds_the_first() -> None:
    assert levels(utilisation(), Window(120, 180)) == {round(0.5 * 24)}


def test_a_window_after_the_last_reading_holds_it_to_the_run_s_end() -> None:
    assert levels(utilisation(run_end=400), Window(250, 350)) == {round(0.8 * 24)}
    assert levels(utilisation(), Window(250, 350)) == {round(0.8 * 24)}  # end unknown
    assert levels(utilisation(run_end=240), Window(250, 350)) == {0}  # after the run: blank


def test_nothing_is_drawn_before_the_first_reading() -> None:
    assert levels(utilisation(), Window(0, 90)) == {0}


def test_a_column_covering_a_change_shows_the_higher_reading() -> None:
    lane = utilisation(height=1)
    [(_, cells)] = lane.rows([150, 250])  # 80% from 200 on: the column's highest
    assert cells[0][0] == LEVELS[round(0.8 * 8)]
    lane.values = [80, 50]
    [(_, cells)] = lane.rows([150, 250])  # 80% held from 100 until 200
    assert cells[0][0] == LEVELS[round(0.8 * 8)]


@pytest.mark.parametrize(("height", "labels"), [
    (1, ["GPU0 util %"]), (2, ["GPU0 100%", "0%"]), (3, ["100%", "GPU0 util", "0%"]),
])
def test_utilisation_has_a_percent_scale(height: int, labels: list[str]) -> None:
    assert [label for label, _ in utilisation(height).rows([0, 300])] == labels


def test_the_demo_s_gpu_lane_stays_drawn_when_zoomed_in() -> None:
    view = ReportView(load_demo("launch_bound"))
    lane = next(lane for lane in view.lanes if isinstance(lane, UtilisationLane))
    assert lane.readings is not None
    times = lane.readings.times
    between = Window(times[10] + 1_000, times[10] + 2_000)  # 1 µs of a 100 ms gap
    after = Window(view.limits.end - 1_000_000, view.limits.end)  # past the last reading
    assert times[-1] < after.start
    for window in (between, after):
        text = cells_text(lane.rows(column_edges(window, WIDTH))[-1][1])
        assert text.strip() and " " not in text, window
