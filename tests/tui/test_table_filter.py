"""/ on the Findings, the Graphs and the Allocations filters the table in place: the rows whose
text holds what is typed, a line that says how many; enter keeps it, esc clears it. The
search stays a key away there (ctrl+f), and / still searches where there is no table."""

from __future__ import annotations

import pytest
from textual.command import CommandPalette
from textual.widgets import DataTable, OptionList

from graphdoctor.tui.app import GraphDoctorApp
from graphdoctor.tui.navigation import ShowFinding
from graphdoctor.tui.screens.findings import FindingsScreen
from graphdoctor.tui.screens.graphs import GraphsScreen
from graphdoctor.tui.widgets.table_filter import TableFilter, row_text
from tests.reports import report_for
from tests.tui.helpers import app_for, demo_app, settle, shown

FOUR_FINDINGS = "dist_rank_capture_fails"  # GD101, GD402, GD403, GD401; graph 0 of each rank


def findings_listed(app: GraphDoctorApp) -> list[str]:
    listed = app.screen.query_one("#findings-list", OptionList)
    return [app.view.findings[int(option.id or 0)].id for option in listed.options]


def filter_line(app: GraphDoctorApp) -> str:
    return " ".join(shown(app, "TableFilter Static").split())


async def test_slash_filters_the_findings_as_one_types_and_enter_keeps_it() -> None:
    app = app_for(report_for(FOUR_FINDINGS))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("2", "slash", *"gd40")
        await settle(pilot)
        assert findings_listed(app) == ["GD402", "GD403", "GD401"]
        assert filter_line(app) == "3 of 4 rows match 'gd40'"
        await pilot.press("3", "enter")  # GD403: the third finding of the report
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, FindingsScreen) and findings_listed(app) == ["GD403"]
        assert app.focused is screen.query_one("#findings-list") and screen.current == 2
        assert "GD403" in shown(app, "#finding-text")
        assert screen.query_one(TableFilter).display  # kept, and said


async def test_esc_clears_the_filter_from_the_field_and_from_the_table() -> None:
    app = app_for(report_for(FOUR_FINDINGS))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("2", "slash", *"GD101", "escape")
        await settle(pilot)
        assert len(findings_listed(app)) == 4 and not app.screen.query_one(TableFilter).display
        await pilot.press("slash", *"GD101", "enter", "escape")
        await settle(pilot)
        assert len(findings_listed(app)) == 4 and app.current_mode == "findings"
        assert app.focused is app.screen.query_one("#findings-list")


async def test_a_finding_asked_for_that_the_filter_hides_clears_the_filter() -> None:
    app = app_for(report_for(FOUR_FINDINGS))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("2", "slash", *"GD403", "enter")
        await settle(pilot)
        app.post_message(ShowFinding(0))
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, FindingsScreen) and screen.current == 0
        assert len(findings_listed(app)) == 4


async def test_the_graphs_filter_keeps_the_rows_that_hold_the_text() -> None:
    app = app_for(report_for(FOUR_FINDINGS))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("5")
        await settle(pilot)
        await pilot.press("slash", *"FAIL", "enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, GraphsScreen)
        assert screen.query_one(DataTable).row_count == 1
        assert filter_line(app) == "1 of 2 rows match 'FAIL'"
        assert "rank 1 · graph 0 · torch.cuda.graph · failed" in shown(app, "#graph-text")


async def test_the_allocations_filter_keeps_its_rows_through_a_new_sort() -> None:
    app = app_for(report_for("memory_growth_replays"))  # phases: replay, eager, capture
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("4")
        await settle(pilot)
        await pilot.press("slash", *"cap", "enter", "r")  # r: the other order
        await settle(pilot)
        table = app.screen.query_one(DataTable)
        rows = [row_text(table.get_row_at(row)) for row in range(table.row_count)]
        assert len(rows) == 1 and rows[0].startswith("capture")
        assert filter_line(app) == "1 of 3 rows match 'cap'"


async def test_the_search_opens_on_every_screen_with_slash_or_where_it_filters_ctrl_f() -> None:
    app = demo_app()
    async with app.run_test(size=(120, 40)) as pilot:
        for screen, key in [("1", "slash"), ("2", "ctrl+f"), ("3", "slash"), ("4", "ctrl+f"),
                            ("5", "ctrl+f")]:
            await pilot.press(screen)
            await settle(pilot)
            await pilot.press(key)
            await settle(pilot)
            assert isinstance(app.screen, CommandPalette), (screen, key)
            await pilot.press("escape")
            await settle(pilot)


@pytest.mark.parametrize("screen", ["2", "5"])
async def test_the_footer_keeps_quit_in_80_columns_with_the_filter_s_key(screen: str) -> None:
    app = demo_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(screen)
        await settle(pilot)
        keys = list(app.screen.query("FooterKey"))  # Textual does not export the class
        palette = next(key for key in keys if key.has_class("-command-palette"))
        visible = {getattr(key, "action") for key in keys  # noqa: B009
                   if key is not palette and key.region.right <= palette.region.x}
        assert {"filter", "help", "quit"} <= visible
