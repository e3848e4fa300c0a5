"""Hostile reports (tests/hostile.py) in the viewer: no control character from a report is
sent to the terminal, and markup in it is shown as typed. Each view's text is checked for
every recorded scenario, then the app itself is toured, screen by screen."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text
from textual.command import CommandList
from textual.filter import LineFilter
from textual.widgets import Static

from graphdoctor.trace.event_kinds import KINDS, rows_of
from graphdoctor.tui.app import GraphDoctorApp
from graphdoctor.tui.capture_story import story
from graphdoctor.tui.events import STRUCTURE, EventRef
from graphdoctor.tui.rendering import details_view, evidence_label, finding_view
from graphdoctor.tui.report_view import ReportView
from graphdoctor.tui.safe_text import ShowControls, report_text
from graphdoctor.tui.screens.allocations import cell
from graphdoctor.tui.screens.graph_story import story_option
from graphdoctor.tui.screens.graphs import graph_cells
from graphdoctor.tui.screens.summary import (
    environment_text,
    finding_options,
    outcome_text,
    verdict_options,
)
from graphdoctor.tui.search import search_items
from tests.hostile import (
    EVERYTHING,
    MARKUP_SHOWN,
    SHORT,
    SHORT_MARKUP,
    hostile_report,
    leaks,
    visible,
)
from tests.reports import report_for, scenario_names
from tests.tui.helpers import plain, settle
from tests.tui.tour import SIZE, drawn, tour

# (payload, whether words are kept, the markup to find shown as typed)
VARIANTS = {"every string": (EVERYTHING, False, MARKUP_SHOWN),
            "words kept": (SHORT, True, SHORT_MARKUP)}


def views(view: ReportView) -> Iterator[RenderableType]:
    """What the screens draw of a report, each as the renderable a widget is given."""
    yield outcome_text(view)
    yield environment_text(view)
    for option in verdict_options(view) + finding_options(view):
        assert isinstance(option.prompt, (Text, Table)), option.prompt  # never markup
        yield option.prompt
    for finding in view.findings:
        yield finding_view(view, finding)
        yield from (report_text(evidence_label(view, item, ref))  # as the evidence list does
                    for item, ref in view.evidence(finding))
    for rank, rank_view in view.rank_views.items():
        trace = rank_view.trace
        kinds = [k for k in STRUCTURE if getattr(trace, k)] + \
            [kind.name for kind in KINDS if len(rows_of(trace, kind))]
        yield from (details_view(view, view.describe(EventRef(k, 0, rank))) for k in kinds)
    for row in view.graph_rows:
        yield from _cells(graph_cells(row, view.multi_rank))
    for rank, rank_view in view.rank_views.items():  # each graph's own screen: its steps
        for graph in rank_view.trace.graphs:
            yield from (story_option(line).prompt for line in story(view, rank, graph))
    for grouping in ("phase", "pool", "site"):
        yield from (cell(group, "key") for group in view.alloc_groups(grouping))
    yield from (Text(item.text) for item in search_items(view))


def _cells(cells: Sequence[Any]) -> Iterator[Text]:
    """A table's cells: text, never a string the table would read as markup."""
    for value in cells:
        assert isinstance(value, Text) or value.isdigit() or value.endswith("(internal)"), value
        yield value if isinstance(value, Text) else Text(value)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("scenario", scenario_names())
def test_every_view_shows_a_report_s_text_plain(scenario: str, variant: str) -> None:
    payload, keep_words, markup = VARIANTS[variant]
    view = ReportView(hostile_report(scenario, payload, keep_words))
    shown = [plain(renderable, width=200) for renderable in views(view)]
    for text in shown:
        assert not leaks(text), leaks(text)[:5]
    assert markup in "".join(shown)


class WithoutTheFilter(GraphDoctorApp):
    """The app without its last line of defence (the line filter that cleans all it draws),
    so that a test sees what each view itself sends."""

    def get_line_filters(self) -> Sequence[LineFilter]:
        return [f for f in super().get_line_filters() if not isinstance(f, ShowControls)]


# The stops where report text is always on screen, so markup would be seen if it were taken
# as markup: the summary's verdicts and the findings' titles.
SHOWS_MARKUP = ("summary", "finding 0")


def search_results(app: GraphDoctorApp) -> str:
    """The text of the hits the search palette lists."""
    hits = app.screen.query_one(CommandList)
    return "\n".join(str(hits.get_option_at_index(i).prompt) for i in range(hits.option_count))


@pytest.mark.parametrize(("scenario", "variant"), [("dist_rank_capture_fails", "every string"),
                                                   ("item_in_capture", "words kept")])
async def test_each_screen_shows_a_report_s_text_without_sending_its_controls(
        scenario: str, variant: str) -> None:
    payload, keep_words, markup = VARIANTS[variant]
    app = WithoutTheFilter(hostile_report(scenario, payload, keep_words), "hostile")
    stops = []
    async with app.run_test(size=SIZE) as pilot:
        async for where, output in tour(pilot, "a"):
            stops.append(where)
            assert not leaks(output), (where, leaks(output)[:5])
            if where in SHOWS_MARKUP:
                assert markup in visible(output), where
            if where == "search":
                assert markup in search_results(app)
    assert app.return_code is None, app.crash_summary()
    assert {"summary", "finding 0", "timeline", "help", "search"} <= set(stops)


@pytest.mark.parametrize("app_class", [GraphDoctorApp, WithoutTheFilter])
async def test_the_app_shows_a_control_that_reached_a_widget_raw(
        app_class: type[GraphDoctorApp]) -> None:
    app = app_class(report_for("item_in_capture"))
    async with app.run_test(size=(80, 24)) as pilot:
        await app.screen.mount(Static(Text("raw \x1b]0;owned\x07 \x9b2J \u202eevil")))
        await settle(pilot)
        sent = leaks(drawn(app))
    assert bool(sent) == (app_class is WithoutTheFilter)
