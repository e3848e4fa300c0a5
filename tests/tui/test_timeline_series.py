"""Series answer per-column questions by bisection; TimeOrder keeps rows where they are."""

from __future__ import annotations

from graphdoctor.trace.model import Sync, Table
from graphdoctor.tui.palette import Mark
from graphdoctor.tui.timeline.layout import cells_text
from graphdoctor.tui.timeline.series import Series, TimeOrder

DOT = Mark("•", "white", 1)
EDGES = [0, 10, 20, 30, 40]


def text(cells: list) -> str:
    return "".join(" " if cell is None else cell[0] for cell in cells)


def test_instants_mark_the_columns_they_fall_in() -> None:
    series = Series("syncs", "sync", DOT, [5, 15, 16, 39])
    assert text(series.cells(EDGES)) == "•• •"


def test_spans_show_how_much_of_each_column_they_cover() -> None:
    series = Series("replays", "replay", DOT, [0, 20], ends=[10, 23])
    assert text(series.cells(EDGES)) == "█ ▒ "


def test_a_long_span_is_carried_into_the_columns_it_crosses() -> None:
    series = Series("calls", "call", DOT, [5], ends=[35])
    assert text(series.cells(EDGES)) == "▓██▓"


def test_unshaded_spans_keep_their_glyph() -> None:
    series = Series("phases", "capture", Mark("c", "", 3), [12], ends=[25], shaded=False)
    assert text(series.cells(EDGES)) == " cc "


def test_navigation_by_time() -> None:
    series = Series("syncs", "sync", DOT, [5, 15, 15, 30], rows=[7, 8, 9, 10])
    assert series.first_after(15) == 3
    assert series.last_before(15) == 0
    assert series.first_after(30) is None
    assert series.nearest(10, 40, 29) == 3
    assert series.find(9, 15) == 2
    assert series.find(9, 5) is None
    assert series.row(2) == 9


def test_nearest_finds_a_span_running_across_the_column() -> None:
    series = Series("calls", "call", DOT, [5], ends=[35])
    assert series.nearest(20, 30, 25) == 0
    assert Series("syncs", "sync", DOT, [5]).nearest(20, 30, 25) is None


def _syncs(times: list[int], phases: list[str]) -> Table:
    table = Table(Sync)
    for t, phase in zip(times, phases, strict=True):
        table.append(Sync(t, "item", -1, -1, 0, -1, phase))
    return table


def test_time_order_leaves_a_sorted_table_alone() -> None:
    order = TimeOrder(_syncs([1, 2, 3], ["eager", "capture", "eager"]))
    assert order.order is None
    positions = order.where(phase="capture")
    assert list(order.times_at(positions)) == [2]
    assert order.rows_at(positions) == [1]
    assert isinstance(order.where(), range)


def test_time_order_sorts_an_unsorted_table_without_moving_its_rows() -> None:
    table = _syncs([30, 10, 20], ["eager", "capture", "capture"])
    order = TimeOrder(table)
    positions = order.where(phase="capture")
    series = order.series("syncs", "sync", DOT, positions)
    assert list(series.times) == [10, 20]
    assert [series.row(i) for i in range(len(series))] == [1, 2]
    assert table.data["t"] == [30, 10, 20]  # evidence still points at the same rows


def test_a_value_no_row_has_selects_nothing_and_one_every_row_has_selects_all() -> None:
    order = TimeOrder(_syncs([1, 2], ["eager", "eager"]))
    assert order.where(phase="replay") == []
    assert isinstance(order.where(phase="eager"), range)
    assert cells_text([("a", "")]) == "a"
