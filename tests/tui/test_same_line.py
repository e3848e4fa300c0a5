"""A selected event's line of the user's code: every event from it underlined, on every lane
of its rank, found from the few stacks rather than from every event."""

from __future__ import annotations

from rich.style import Style

from graphdoctor.tui.events import EventRef
from graphdoctor.tui.palette import SAME_LINE_STYLE, Mark
from graphdoctor.tui.report_view import ReportView
from graphdoctor.tui.same_line import (
    LOOKUP_COST,
    SameLine,
    line_of,
    merged,
    positions_in,
    rows_with_stacks,
    same_line,
    stacks_from,
    underline_overlay,
)
from graphdoctor.tui.timeline.lanes import EventAt
from graphdoctor.tui.timeline.layout import Window, column_edges
from graphdoctor.tui.timeline.series import Series
from graphdoctor.tui.timeline.view import ScreenRow, frame_text
from graphdoctor.tui.widgets.timeline import Timeline
from tests.reports import report_for
from tests.tui.helpers import app_for, settle, shown

SYNC = EventRef("syncs", 1)  # the .item() on line 15 that broke the capture


def line_events(view: ReportView, line: tuple[str, int]) -> dict[int, set[EventRef]]:
    """By brute force: the events on each lane whose details show a stack from ``line``."""
    found: dict[int, set[EventRef]] = {}
    for index, lane in enumerate(view.lanes):
        for series in lane.series:
            for position in range(len(series)):
                ref = EventAt(series, position).ref
                if ref.kind != "findings" and line_of(view.describe(ref).stack) == line:
                    found.setdefault(index, set()).add(ref)
    return found


def test_the_stacks_and_rows_from_a_line_are_found() -> None:
    view = ReportView(report_for("item_in_capture"))
    line = line_of(view.describe(SYNC).stack)
    assert line is not None and line[0].endswith("item_in_capture.py") and line[1] == 15
    stacks = stacks_from(view.trace, line)
    assert stacks and all(line_of(view.trace.stack(s)) == line for s in stacks)
    assert len(stacks) < len(view.trace.stacks)  # not every stack: the other lines' are left
    rows = rows_with_stacks(view.trace, stacks)
    assert 1 in rows["syncs"] and 0 not in rows["syncs"]  # the sync before the capture
    assert 0 in rows["exceptions"]  # the error it raised, from the same line


def test_every_event_from_the_line_is_found_on_its_lanes() -> None:
    for name, ref in (("item_in_capture", SYNC), ("launch_bound", None)):
        view = ReportView(report_for(name))
        if ref is None:  # the first event with a user's line
            ref = next(EventAt(s, 0).ref for lane in view.lanes for s in lane.series
                       if len(s) and line_of(view.describe(EventAt(s, 0).ref).stack))
        found = view.same_line(ref)
        assert found is not None
        expected = line_events(view, found.line)
        assert set(found.intervals) == set(expected), name
        for lane, refs in expected.items():
            for each in refs:
                start, end = view.span_of(each) or (-1, -1)
                assert any(s <= start and end <= e for s, e in found.intervals[lane]), each
        assert found.count == len(set().union(*expected.values())) > 1


def test_a_series_is_searched_by_bisection_or_one_pass_alike() -> None:
    series = Series("syncs", "sync", Mark("s", "", 1), list(range(0, 1000, 10)),
                    rows=list(range(99, -1, -1)))  # row 99 first
    few = [(99, 0), (0, 990), (200, 5)]  # the last is not in it
    many = few + [(row, 10 * (99 - row)) for row in range(10, 20)]
    assert len(few) * LOOKUP_COST < len(series) <= len(many) * LOOKUP_COST
    assert sorted(positions_in(series, few)) == [(0, 99), (99, 0)]
    assert sorted(positions_in(series, many)) == sorted(
        [(0, 99), (99, 0)] + [(row, 99 - row) for row in range(10, 20)])


def test_overlapping_events_are_merged_so_their_ends_rise() -> None:
    assert merged([(50, 60), (0, 10), (5, 30), (30, 30), (70, 70)]) == [(0, 30), (50, 60),
                                                                         (70, 70)]


def test_an_event_with_no_user_line_underlines_nothing() -> None:
    view = ReportView(report_for("item_in_capture"))
    assert same_line(view.trace, -1, view.lanes, ()) is None
    assert view.same_line(EventRef("memory", 0)) is None  # a sample has no stack


def test_the_note_counts_the_events_and_names_the_line() -> None:
    assert SameLine(("/w/train.py", 15), 3).note("/w") == \
        "3 events from this line (train.py:15) are underlined"
    assert SameLine(("/w/train.py", 15), 1).note() == \
        "1 event from this line (/w/train.py:15) is underlined"


def test_the_overlay_underlines_the_columns_of_the_events_on_their_lane_s_last_row() -> None:
    edges = column_edges(Window(0, 100), 10)
    rows = [ScreenRow(0, "Mem", [("▇", "cyan")] * 10), ScreenRow(0, "", [("▁", "cyan")] * 10),
            ScreenRow(1, "Syncs", [(" ", "")] * 5 + [("s", "yellow")] + [(" ", "")] * 4)]
    overlay = underline_overlay({0: [(25, 45)], 1: [(55, 55)], 7: [(0, 0)]})
    out = overlay(rows, edges)
    assert out[0] == rows[0]  # the top row of a taller lane is left alone
    assert [c for c, (_, style) in enumerate(out[1].cells) if SAME_LINE_STYLE in style] == [2, 3, 4]
    assert out[2].cells[5] == ("s", f"yellow {SAME_LINE_STYLE}")
    assert [glyph for glyph, _ in out[2].cells] == [glyph for glyph, _ in rows[2].cells]


def styles_of(timeline: Timeline, lane: int) -> tuple[str, list[Style]]:
    """The glyphs and the style of each plot cell of a lane's last row, as drawn."""
    y = 1 + timeline.lane_row_span(lane)[1] - int(timeline.scroll_offset.y)
    text, styles = "", []
    for segment in list(timeline.render_line(y))[1:]:  # after the label
        text += segment.text
        styles += [segment.style or Style.null()] * len(segment.text)
    return text, styles


async def test_selecting_an_event_underlines_its_line_s_events_on_every_lane() -> None:
    app = app_for(report_for("item_in_capture"))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("3", "p")  # the sync at line 15
        await settle(pilot)
        timeline = app.screen.query_one(Timeline)
        assert timeline.state.selected == SYNC
        text = shown(app, "#event-text")
        found = app.view.same_line(SYNC)
        assert found is not None and found.count == 4
        assert "4 events from this line (" in text
        assert "item_in_capture.py:15) are underlined" in text
        width, state = timeline.plot_width, timeline.state
        plain = frame_text(timeline.lanes, state, width, timeline.label_width)
        for lane in found.intervals:
            glyphs, styles = styles_of(timeline, lane)
            assert any(style.underline for style in styles), timeline.lanes[lane].key
            row = 1 + timeline.lane_row_span(lane)[1]  # the same row without the overlay
            assert plain[row][timeline.label_width:] == glyphs  # glyphs kept
        untouched = next(i for i, lane in enumerate(timeline.lanes) if lane.key == "phases")
        assert not any(style.underline for style in styles_of(timeline, untouched)[1])
        await pilot.press("escape")
        for lane in found.intervals:
            assert not any(style.underline for style in styles_of(timeline, lane)[1])
