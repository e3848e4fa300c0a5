"""The timeline's geometry, as text: windows, columns, the axis and cells."""

from __future__ import annotations

import pytest

from graphdoctor.tui.timeline.layout import (
    BLANK,
    MIN_SPAN_NS,
    Window,
    axis,
    axis_text,
    bar_rows,
    cells_text,
    column_edges,
    column_of,
    fit_label,
    nice_step,
    overlay_labels,
    run_window,
    shade,
    time_of,
    with_cursor,
)

LIMITS = Window(0, 1_000_000)


def test_zooming_in_keeps_the_anchor_in_the_same_column() -> None:
    window = Window(0, 1000)
    zoomed = window.zoomed(0.5, anchor=250, limits=Window(0, 1000))
    assert zoomed == Window(125, 625)
    assert column_of(zoomed, 100, 250) == column_of(window, 100, 250) == 25


def test_zoom_stops_at_the_finest_span_and_at_the_whole_run() -> None:
    fine = Window(500, 600).zoomed(0.001, anchor=550, limits=LIMITS)
    assert fine.span == MIN_SPAN_NS
    assert Window(0, 10_000).zoomed(1000, anchor=0, limits=LIMITS) == LIMITS


def test_pan_and_around_stay_inside_the_run() -> None:
    assert Window(900_000, 1_000_000).panned(50_000, LIMITS) == Window(900_000, 1_000_000)
    assert Window(0, 1000).panned(-10, LIMITS) == Window(0, 1000)
    assert Window(0, 1000).around(10, 200, LIMITS) == Window(0, 200)
    assert Window(0, 1000).around(5000, 200, LIMITS) == Window(4900, 5100)


def test_run_window_is_never_narrower_than_the_finest_zoom() -> None:
    assert run_window(0) == Window(0, MIN_SPAN_NS)


def test_columns_cover_the_window_exactly_once() -> None:
    edges = column_edges(Window(100, 200), 4)
    assert edges == [100, 125, 150, 175, 200]
    assert [column_of(Window(100, 200), 4, t) for t in (100, 124, 125, 199)] == [0, 0, 1, 3]
    assert time_of(Window(100, 200), 4, 1) == 137


@pytest.mark.parametrize(("raw", "step"),
                         [(1, 1), (3, 5), (7, 10), (11, 20), (4_000_001, 5_000_000)])
def test_nice_steps_are_one_two_or_five_times_a_power_of_ten(raw: float, step: int) -> None:
    assert nice_step(raw) == step


def test_axis_labels_a_run_in_seconds() -> None:
    ticks = axis(Window(0, 5_000_000_000), width=60)
    assert ticks.origin == "time"
    assert axis_text(ticks, 60) == (
        "╷0 s        ╷1 s        ╷2 s        ╷3 s        ╷4 s        ")


def test_a_deep_zoom_keeps_absolute_labels_while_they_fit() -> None:
    ticks = axis(Window(3_149_052_000, 3_149_152_000), width=60)  # 100 µs, 3 s in
    assert ticks.origin == "time"
    assert [t.label for t in ticks.ticks][:2] == ["3.14906 s", "3.14908 s"]


def test_labels_too_long_to_fit_become_offsets_from_an_origin() -> None:
    ticks = axis(Window(62_921_000_000, 62_921_001_000), width=60)  # 1 µs, a minute in
    assert ticks.origin == "62.9209998 s"
    assert [t.label for t in ticks.ticks][:3] == ["+200 ns", "+400 ns", "+600 ns"]
    assert axis_text(ticks, 60).startswith("╷+200 ns")


def test_axis_labels_never_overlap_or_spill() -> None:
    ticks = axis(Window(0, 1_000), width=13, min_gap=2)
    text = axis_text(ticks, 13)
    assert len(text) == 13
    assert text.count("╷") < len(ticks.ticks)  # some were dropped rather than overlapped


def test_shades_and_bars() -> None:
    assert [shade(f) for f in (0.0, 0.3, 0.6, 1.0, 7.0)] == ["░", "▒", "▓", "█", "█"]
    rows = bar_rows([None, 0.0, 0.5, 1.0], height=2, style="cyan")
    assert [cells_text(row) for row in rows] == ["   █", " ▁██"]


def test_labels_go_into_runs_that_fit_them_cut_or_initials_into_those_that_do_not() -> None:
    cells = [("x", "s")] * 18
    keys = ["capture"] * 9 + ["replay"] * 2 + ["warmup"] * 6 + [None]
    out = overlay_labels(cells, keys, {"capture": "capture", "replay": "replay",
                                       "warmup": "warmup"})
    assert cells_text(out) == "xcapturexRx" + "xwar…x" + "x"


def test_lane_labels_cut_in_the_middle_keep_both_ends() -> None:
    assert fit_label("default strm", 12) == "default strm"
    assert fit_label("65× tv_compile_batch_sizes.py:34", 12) == "65× t….py:34"


def test_the_cursor_reverses_its_cell_and_ignores_columns_off_screen() -> None:
    cells = [BLANK, ("█", "green")]
    assert with_cursor(cells, 1) == [BLANK, ("█", "green reverse")]
    assert with_cursor(cells, 5) == cells
