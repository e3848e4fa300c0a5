"""The app driven with Pilot: keys pressed, what is shown, where jumps land."""

from __future__ import annotations

import dataclasses

from textual.command import CommandPalette
from textual.widgets import OptionList

from graphdoctor.report.document import Report
from graphdoctor.trace.model import NONE, Trace
from graphdoctor.tui.events import EventRef
from graphdoctor.tui.navigation import ShowGraph
from graphdoctor.tui.screens.allocations import AllocationsScreen
from graphdoctor.tui.screens.findings import FindingsScreen
from graphdoctor.tui.screens.graphs import COLUMNS, GraphsScreen
from graphdoctor.tui.screens.help import HelpScreen
from graphdoctor.tui.screens.summary import SummaryScreen
from graphdoctor.tui.screens.timeline import TimelineScreen
from graphdoctor.tui.widgets.timeline import Timeline
from tests.reports import report_for
from tests.tui.helpers import app_for, demo_app, plain, settle, shown


async def test_it_opens_on_the_summary_with_the_error_and_its_cause() -> None:
    app = demo_app()
    async with app.run_test(size=(100, 40)):
        assert isinstance(app.screen, SummaryScreen)
        outcome = shown(app, "#outcome")
        assert "exited with code 1" in outcome
        assert "cudaErrorStreamCaptureInvalidated" in outcome  # what the user saw
        assert "item_in_capture.py:15" in outcome  # and the line that caused it
        verdicts = app.screen.query_one("#verdicts", OptionList)
        assert "failed" in plain(verdicts.get_option_at_index(0).prompt)  # type: ignore[arg-type]


async def test_numbers_and_letters_switch_screens() -> None:
    app = demo_app()
    async with app.run_test(size=(100, 30)) as pilot:
        for key, screen in [("2", FindingsScreen), ("3", TimelineScreen),
                            ("4", AllocationsScreen), ("5", GraphsScreen), ("1", SummaryScreen),
                            ("f", FindingsScreen), ("t", TimelineScreen), ("g", GraphsScreen),
                            ("a", AllocationsScreen), ("s", SummaryScreen)]:
            await pilot.press(key)
            assert isinstance(app.screen, screen), key


async def test_help_lists_every_screens_keys_and_closes() -> None:
    app = demo_app()
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        text = shown(app, "#help-text")
        for expected in ("Zoom in", "Next event", "Show on timeline", "Sort →", "Timeline legend",
                         "sync in capture", "wheel: zoom", "Next problem (a finding's evidence)",
                         "Previous problem", "Details"):
            assert expected in text
        await pilot.press("escape")
        assert isinstance(app.screen, SummaryScreen)


async def test_q_quits() -> None:
    app = demo_app()
    async with app.run_test() as pilot:
        await pilot.press("q")
        assert app.return_code == 0 and not app.is_running


async def test_a_finding_shows_the_fix_the_culprit_line_and_the_evidence() -> None:
    app = demo_app()
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.press("2")
        text = shown(app, "#finding-text")
        assert "GD101" in text and "Fix:" in text
        assert "▶15" in text and "scale = y.abs().max().item()" in text
        evidence = app.screen.query_one("#evidence", OptionList)
        labels = [str(evidence.get_option_at_index(i).prompt) for i in range(evidence.option_count)]
        assert labels[0].startswith("sync: item at")
        assert labels[1].startswith("AcceleratorError")


async def test_enter_on_a_finding_shows_its_evidence_on_the_timeline() -> None:
    app = demo_app()
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.press("2", "enter")
        await settle(pilot)
        assert isinstance(app.screen, TimelineScreen)
        timeline = app.screen.query_one(Timeline)
        state = timeline.state
        sync_time = app.view.trace.tables["syncs"].data["t"][1]
        assert state.selected == EventRef("syncs", 1)
        assert timeline.lanes[state.lane].key == "syncs"
        assert state.window.contains(sync_time) and state.window.span < app.view.limits.span
        assert "sync: item" in shown(app, "#event-text")
        assert " capture " in shown(app, "#timeline-status")  # the phase it fell in


async def test_other_evidence_can_be_chosen() -> None:
    app = demo_app()
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.press("2", "e", "down", "enter")
        await settle(pilot)
        timeline = app.screen.query_one(Timeline)
        assert timeline.state.selected == EventRef("exceptions", 0)
        assert timeline.lanes[timeline.state.lane].key == "cpu:0"
        assert "operation not permitted" in shown(app, "#event-text")


async def test_zoom_pan_and_fit() -> None:
    app = app_for(report_for("launch_bound"))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("3")
        timeline = app.screen.query_one(Timeline)
        whole = app.view.limits
        assert timeline.state.window == whole
        await pilot.press("plus")
        assert abs(timeline.state.window.span - whole.span / 2) <= 1
        await pilot.press("plus", "shift+right")
        window = timeline.state.window
        assert window.start > whole.start and abs(window.span - whole.span / 4) <= 1
        await pilot.press("minus", "minus", "minus")
        assert timeline.state.window == whole
        await pilot.press("plus", "plus", "0")
        assert timeline.state.window == whole
        assert "window" not in shown(app, "#timeline-status")  # it speaks in times, not names
        assert "ms/col" in shown(app, "#timeline-status")


async def test_cursor_lanes_and_next_event() -> None:
    app = app_for(report_for("item_in_capture"))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("3")
        timeline = app.screen.query_one(Timeline)
        syncs = next(i for i, lane in enumerate(timeline.lanes) if lane.key == "syncs")
        await pilot.press(*["j"] * syncs)
        assert timeline.state.lane == syncs
        await pilot.press("n")
        times = app.view.trace.tables["syncs"].data["t"]
        assert timeline.state.selected == EventRef("syncs", 0)
        assert timeline.state.cursor == times[0]
        await pilot.press("n")
        assert timeline.state.selected == EventRef("syncs", 1)
        await pilot.press("N")
        assert timeline.state.selected == EventRef("syncs", 0)
        await pilot.press("escape")
        assert timeline.state.selected is None
        before = timeline.state.cursor
        await pilot.press("right")
        assert timeline.state.cursor > before
        await pilot.press("enter")  # the sync nearest the cursor, a column or two away
        cursor = timeline.state.cursor
        nearest = min(range(len(times)), key=lambda i: abs(times[i] - cursor))
        assert timeline.state.selected == EventRef("syncs", nearest)
        await pilot.press(*["left"] * 10, "enter")  # nothing within two columns
        assert timeline.state.selected is None
        await pilot.press("k")
        assert timeline.state.lane == syncs - 1


async def test_z_zooms_to_the_phase_under_the_cursor() -> None:
    app = app_for(report_for("item_in_capture"))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("3")
        timeline = app.screen.query_one(Timeline)
        capture = next(p for p in app.view.trace.phases if p.phase == "capture")
        await pilot.press(*["n"] * app.view.trace.phases.index(capture))
        assert timeline.state.selected == EventRef("phases", app.view.trace.phases.index(capture))
        await pilot.press("z")
        window = timeline.state.window
        assert window.start <= capture.start and window.end >= capture.end
        assert window.span < (capture.end - capture.start) * 1.2


async def test_home_and_end_go_to_the_run_s_edges_keeping_the_zoom() -> None:
    app = app_for(report_for("item_in_capture"))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("3")
        timeline = app.screen.query_one(Timeline)
        await pilot.press("plus", "plus")  # zoomed in, somewhere in the middle
        span = timeline.state.window.span
        assert span < timeline.limits.span
        await pilot.press("home")
        assert timeline.state.cursor == timeline.limits.start
        assert timeline.state.window.span == span  # not a 100 ns window
        assert timeline.state.window.start == timeline.limits.start
        await pilot.press("end")
        assert timeline.state.cursor == timeline.limits.end - 1
        assert timeline.state.window.span == span and timeline.state.window.end == \
            timeline.limits.end


async def test_a_click_selects_and_the_wheel_zooms() -> None:
    from textual.events import MouseScrollUp

    from graphdoctor.tui.timeline.layout import column_of, time_of

    app = app_for(report_for("item_in_capture"))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("3")
        timeline = app.screen.query_one(Timeline)
        syncs = next(i for i, lane in enumerate(timeline.lanes) if lane.key == "syncs")
        row = 1 + timeline.lane_row_span(syncs)[0]
        column = timeline.state.cursor_column(timeline.plot_width)
        sync_column = (app.view.trace.tables["syncs"].data["t"][1] * timeline.plot_width
                       // timeline.state.window.span)
        await pilot.click(Timeline, offset=(13 + sync_column, row))
        assert timeline.state.lane == syncs
        assert timeline.state.selected == EventRef("syncs", 1)
        assert column != sync_column
        span = timeline.state.window.span
        under_pointer = time_of(timeline.state.window, timeline.plot_width, sync_column)
        # Pilot has no wheel; post what the driver would (private, but the only way in).
        await pilot._post_mouse_events([MouseScrollUp], Timeline, offset=(13 + sync_column, row))
        assert abs(timeline.state.window.span - span / 2) <= 1
        assert column_of(timeline.state.window, timeline.plot_width, under_pointer) == sync_column


async def test_summary_rows_open_their_finding_and_graph() -> None:
    app = demo_app("launch_bound")
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.press("enter")  # the verdict: faster, so its graph
        await settle(pilot)
        assert isinstance(app.screen, GraphsScreen)
        await pilot.press("1", "tab", "enter")  # the top finding
        assert isinstance(app.screen, FindingsScreen)
        assert app.screen.current == 0


async def test_enter_on_a_failed_verdict_opens_why_with_the_culprit_and_its_fix() -> None:
    app = demo_app()  # item_in_capture: graph 0 failed on an .item()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, FindingsScreen)
        finding = app.view.findings[app.screen.current or 0]
        assert finding.id == "GD101"
        text = shown(app, "#finding-text")
        assert "▶15     scale = y.abs().max().item()" in text and "Fix: Move this read" in text


async def test_graphs_list_each_capture_and_t_shows_it_on_the_timeline() -> None:
    app = demo_app("launch_bound")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("5")
        await settle(pilot)
        table = app.screen.query_one("#graphs-table")
        assert table.row_count == 1  # type: ignore[attr-defined]
        cells = [str(c) for c in table.get_row_at(0)]  # type: ignore[attr-defined]
        column = COLUMNS.index
        assert cells[column("status")] == "captured" and cells[column("nodes")] == "400"
        assert cells[column("replays")] == "1000" and cells[column("function")] == "step"
        text = shown(app, "#graph-text")
        assert "1000 replays" in text and "1002 eager steps" in text and "▶24" in text
        # what the graph holds, from the driver: 200 layers of matmul and tanh in one chain
        assert "content: 400 nodes: 400 kernels · chain 400 of 400, width 1" in text
        assert "200× vectorized_elementwise_kernel<tanh_kernel_cuda>" in text
        assert "-f dot --graph 0" in text
        # the verdict's own summary names its kind and speedup, once
        assert "verdict: 7.54× faster: eager 5,169.0 µs" in text and "(7.54×) —" not in text
        await pilot.press("t")  # enter opens the graph's own screen (test_graph_story)
        await settle(pilot)
        timeline = app.screen.query_one(Timeline)
        assert timeline.state.selected == EventRef("graphs", 0)
        assert timeline.lanes[timeline.state.lane].label.endswith("capture")


async def test_allocations_take_the_keys_once_their_groups_are_in() -> None:
    app = app_for(report_for("many_private_pools"))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("4")
        await settle(pilot)
        app.screen.query_one("#groupings").focus()  # where a loading table's focus went
        await pilot.press("o")
        await settle(pilot)
        assert app.focused is app.screen.query_one("#alloc-table")
        await pilot.press("down", "down")  # no tab needed first
        assert shown(app, "#alloc-text").startswith("(3, 0)")


async def test_allocations_group_sort_and_open() -> None:
    app = app_for(report_for("many_private_pools"))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("4")
        await settle(pilot)
        table = app.screen.query_one("#alloc-table")

        def keys() -> list[str]:
            return [str(table.get_row_at(i)[0]) for i in range(table.row_count)]  # type: ignore[attr-defined]

        assert keys() == ["capture"]
        await pilot.press("o")
        await settle(pilot)
        assert len(keys()) == 8 and keys()[0] == "(1, 0)"  # a pool per graph, biggest first
        await pilot.press("r")
        assert keys()[-1] == "(1, 0)"
        await pilot.press("less_than_sign")
        assert app.screen.sort_column == "allocs"  # type: ignore[attr-defined]
        await pilot.click("#alloc-table", offset=(2, 0))  # the heading of the key column
        assert app.screen.sort_column == "key"  # type: ignore[attr-defined]
        assert keys() == sorted(keys())
        assert "captured into it: graph" in shown(app, "#alloc-text")
        await pilot.press("enter")
        await settle(pilot)
        timeline = app.screen.query_one(Timeline)
        assert timeline.state.selected is not None and timeline.state.selected.kind == "allocs"


async def test_search_finds_a_finding_and_an_event() -> None:
    app = demo_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("slash")
        assert isinstance(app.screen, CommandPalette)
        await pilot.press(*"GD101", "enter")
        await settle(pilot)
        assert isinstance(app.screen, FindingsScreen)
        await pilot.press("ctrl+f", *"synchronization item", "enter")  # / filters the list
        await settle(pilot)
        assert isinstance(app.screen, TimelineScreen)
        assert app.screen.query_one(Timeline).state.selected == EventRef("syncs", 1)


async def test_an_empty_report_opens_every_screen() -> None:
    app = app_for(Report(Trace()))
    async with app.run_test(size=(80, 24)) as pilot:
        assert "no CUDA graph" in plain(
            app.screen.query_one("#verdicts", OptionList).get_option_at_index(0).prompt)  # type: ignore[arg-type]
        for key in "2345":
            await pilot.press(key)
            await settle(pilot)
        await pilot.press("2")
        assert "No findings" in shown(app, "#finding-text")
        await pilot.press("3", "n", "plus", "enter")
        assert app.screen.query_one(Timeline).state.selected is None


async def test_an_unsorted_table_is_read_in_time_order() -> None:
    from bench.synthetic import synthetic_report

    report = synthetic_report(2_000)  # its allocations are appended out of time order
    times = report.trace.tables["allocs"].data["t"]
    assert times != sorted(times)
    app = app_for(report)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("3")
        timeline = app.screen.query_one(Timeline)
        memory = next(i for i, lane in enumerate(timeline.lanes) if lane.key == "memory")
        await pilot.press(*["j"] * memory)
        seen = []
        for _ in range(12):
            await pilot.press("n")
            selected = timeline.state.selected
            if selected is not None and selected.kind == "allocs":
                seen.append(times[selected.index])
        assert seen[0] == min(times) and seen == sorted(seen) and len(seen) >= 8


async def test_panes_stack_in_a_narrow_terminal_and_stand_side_by_side_in_a_wide_one() -> None:
    app = demo_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("2")
        assert app.screen.has_class("narrow")
        await pilot.resize_terminal(160, 48)
        assert not app.screen.has_class("narrow")


async def test_a_graph_asked_for_before_the_table_is_filled_is_highlighted_once_it_is() -> None:
    app = app_for(report_for("many_private_pools"))
    async with app.run_test(size=(120, 40)) as pilot:
        app.post_message(ShowGraph((NONE, 5)))  # the rows are counted off the UI thread
        await settle(pilot)
        # its group of 8 (one line) opened for it: graph 5 is under the group's row
        assert app.screen.query_one("#graphs-table").cursor_row == 6  # type: ignore[attr-defined]
        assert shown(app, "#graph-text").startswith("graph 5 ")


async def test_a_graph_with_a_host_node_names_it_and_one_never_read_shows_no_count() -> None:
    report = report_for("host_node_in_capture")
    app = app_for(report)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("5")
        await settle(pilot)
        table = app.screen.query_one("#graphs-table")
        counts = [str(table.get_row_at(i)[COLUMNS.index("nodes")])  # type: ignore[attr-defined]
                  for i in range(2)]
        assert counts == ["25", "24"]
        text = shown(app, "#graph-text")
        assert "25 nodes: 24 kernels, 1 host · chain 25 of 25" in text
        assert "host node: a function at 0x" in text and "GD210" in text
    unread = [dataclasses.replace(g, anatomy=None) for g in report.trace.graphs]
    app = app_for(dataclasses.replace(report, trace=dataclasses.replace(report.trace,
                                                                        graphs=unread)))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("5")
        await settle(pilot)
        table = app.screen.query_one("#graphs-table")
        assert str(table.get_row_at(0)[COLUMNS.index("nodes")]) == "—"  # type: ignore[attr-defined]
        assert "content:" not in shown(app, "#graph-text")
