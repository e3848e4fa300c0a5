"""The Summary's verdict list shows many graphs of one line as one row, whose members enter
shows under it (and hides again); enter on a member opens its graph."""

from __future__ import annotations

from textual.widgets import OptionList

from graphdoctor.tui.app import GraphDoctorApp
from graphdoctor.tui.screens.graphs import GraphsScreen
from tests.report.many_graphs import many_graphs_report
from tests.tui.helpers import app_for, plain, settle


def labels(app: GraphDoctorApp) -> list[str]:
    verdicts = app.screen.query_one("#verdicts", OptionList)
    return [plain(verdicts.get_option_at_index(i).prompt, 160)  # type: ignore[arg-type]
            for i in range(verdicts.option_count)]


async def test_a_group_of_verdicts_opens_and_closes_and_its_members_open_their_graph() -> None:
    app = app_for(many_graphs_report())
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        closed = labels(app)
        assert len(closed) == 2
        assert "▸ 32 graphs (torch.cuda.graph, decode.py:88)" in closed[0]
        assert "faster 2.00×–5.10×," in closed[0] and "median" not in closed[0]  # 3.55× beside
        assert "(enter: its 32 graphs)" in closed[0]
        await pilot.press("enter")
        opened = labels(app)
        assert len(opened) == 34 and "▾ 32 graphs" in opened[0]
        assert "graph 0 (torch.cuda.graph, decode.py:88)" in opened[1]
        assert "graph 32 (torch.cuda.graph, decode.py:120)" in opened[-1]
        await pilot.press("enter")
        assert labels(app) == closed
        await pilot.press("enter", "down", "down", "enter")
        await settle(pilot)
        assert isinstance(app.screen, GraphsScreen)
        # graph 1, in the Graphs screen's own group of the 32, opened for it: under the
        # group's row and graph 0
        assert app.screen.query_one("#graphs-table").cursor_row == 2  # type: ignore[attr-defined]
