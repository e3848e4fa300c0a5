"""Numbers as every report and screen prints them (graphdoctor.units): the reports' wording,
which the viewer shares."""

from __future__ import annotations

import pytest

from graphdoctor.units import (
    counted,
    format_bytes,
    format_duration,
    format_moment,
    format_offset,
    format_speedup,
)


@pytest.mark.parametrize(("ns", "text"), [
    (0, "0 ns"), (5, "5 ns"), (999, "999 ns"), (1_000, "1 µs"), (1_200_000, "1.2 ms"),
    (1_234_567, "1.23 ms"), (3_149_052_772, "3.15 s"), (62_000_000_000, "62 s"),
    (685_612.5, "686 µs"), (None, "-"), (-1, "-"),
])
def test_durations_keep_three_figures_in_the_largest_fitting_unit(ns: float | None,
                                                                  text: str) -> None:
    assert format_duration(ns) == text


@pytest.mark.parametrize(("ns", "text"), [
    (999_700, "1 ms"), (999.6, "1 µs"), (999_999_999, "1 s"), (1_234 * 10**9, "1,234 s"),
])
def test_a_duration_rounded_up_to_the_next_unit_is_said_in_it(ns: float, text: str) -> None:
    """The reports' old wording printed these as "1e+03 µs" and "1.23e+03 s"."""
    assert format_duration(ns) == text


@pytest.mark.parametrize(("ns", "step", "text"), [
    (3_149_052_772, 1_000_000, "3.149 s"),
    (3_149_052_772, 100_000_000, "3.1 s"),
    (3_149_052_772, 10_000, "3.14905 s"),
    (150_000_000, 1_000_000, "150 ms"),
    (2_000_000_000, 1_000_000_000, "2 s"),
    (2_500_000_000, 500_000_000, "2.5 s"),
])
def test_moments_carry_the_precision_their_step_needs(ns: int, step: int, text: str) -> None:
    assert format_moment(ns, step) == text


def test_offsets_are_signed() -> None:
    assert format_offset(20_000, 10_000) == "+20 µs"
    assert format_offset(-1_500_000, 500_000) == "-1.5 ms"


@pytest.mark.parametrize(("size", "text"), [
    (512, "512 B"), (35_651_584, "34.0 MiB"), (1024, "1.0 KiB"), (int(1.5 * 2**30), "1.5 GiB"),
    (-2048, "-2.0 KiB"), (3 * 2**40, "3.0 TiB"),
])
def test_bytes_use_binary_units(size: int, text: str) -> None:
    assert format_bytes(size) == text


def test_small_helpers() -> None:
    assert counted(1, "graph") == "1 graph"
    assert counted(1000, "replay") == "1,000 replays"
    assert counted(2, "stretch", "stretches") == "2 stretches"
    assert format_speedup(5.7) == "5.70×"
    assert format_speedup(12.5) == "12.50×"
    assert format_speedup(None) == "-"
