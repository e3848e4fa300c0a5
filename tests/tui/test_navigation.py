"""Moving between screens: the keys, the bar and the help all follow the app's SCREENS, and
each jump posts its navigation message and lands on the right screen, on the right row."""

from __future__ import annotations

from textual.message import Message
from textual.widgets import DataTable

from graphdoctor.trace.model import NONE
from graphdoctor.tui.app import SCREENS, GraphDoctorApp
from graphdoctor.tui.events import EventRef
from graphdoctor.tui.navigation import GoToScreen, ShowEvent, ShowFinding, ShowGraph
from graphdoctor.tui.screens.findings import FindingsScreen
from graphdoctor.tui.screens.graphs import GraphsScreen
from graphdoctor.tui.screens.timeline import TimelineScreen
from graphdoctor.tui.widgets.mode_bar import ModeBar
from graphdoctor.tui.widgets.timeline import Timeline
from tests.reports import report_for
from tests.tui.helpers import app_for, demo_app, screen_text, settle, shown

BAR = "1 Summary 2 Findings (1) 3 Timeline 4 Allocations 5 Graphs"
EVERYWHERE = [("1 s", "Summary"), ("2 f", "Findings"), ("3 t", "Timeline"),
              ("4 a", "Allocations"), ("5 g", "Graphs"), ("? F1", "Help"),
              ("esc backspace", "Back"), ("/", "Search"),
              ("ctrl+f", "Search, also where / filters a table"), ("q", "Quit"),
              ("n", "Next hit of the search (once one is chosen)"),
              ("N", "Previous hit of the search"), ("esc", "Forget the search (esc again: back)")]


def help_sections(text: str) -> dict[str, list[tuple[str, str]]]:
    """The help's sections (a heading flush left), each with its (keys, description) lines."""
    sections: dict[str, list[tuple[str, str]]] = {}
    for line in text.splitlines():
        if line and not line.startswith(" "):
            lines = sections.setdefault(line.strip(), [])
        elif line.strip():
            lines.append((line[2:18].strip(), line[18:].strip()))
    return sections


def selected(app: GraphDoctorApp) -> EventRef | None:
    return app.screen.query_one(Timeline).state.selected


async def test_each_screen_opens_on_its_number_and_its_letter() -> None:
    app = demo_app()
    async with app.run_test(size=(100, 30)) as pilot:
        for number, entry in enumerate(SCREENS, 1):
            await pilot.press(str(number))
            assert type(app.screen) is entry.screen and app.current_mode == entry.name
        for entry in SCREENS:
            await pilot.press(entry.key)
            assert type(app.screen) is entry.screen, entry.key


async def test_the_bar_and_the_help_name_the_screens_in_order() -> None:
    app = demo_app()
    async with app.run_test(size=(100, 40)) as pilot:
        assert BAR in shown(app, "ModeBar")
        await pilot.press("question_mark")
        sections = help_sections(shown(app, "#help-text"))
        assert sections["Everywhere"] == EVERYWHERE
        assert list(sections)[:5] == ["Everywhere", "Timeline", "Findings", "Allocations",
                                      "Graphs"]


async def test_a_click_on_a_title_in_the_bar_opens_that_screen() -> None:
    posted: list[Message] = []
    app = demo_app()
    async with app.run_test(size=(100, 30), message_hook=posted.append) as pilot:
        column = shown(app, "ModeBar").index("Timeline")
        await pilot.click(ModeBar, offset=(column, 0))
        assert isinstance(app.screen, TimelineScreen)
        assert {m.name for m in posted if isinstance(m, GoToScreen)} == {"timeline"}


async def test_a_findings_evidence_is_posted_and_selected_on_its_lane() -> None:
    posted: list[Message] = []
    app = demo_app()
    async with app.run_test(size=(100, 40), message_hook=posted.append) as pilot:
        await pilot.press("2", "enter")
        await settle(pilot)
        # The hook sees a message at each step of its bubbling: the same one, twice.
        assert {m.ref for m in posted if isinstance(m, ShowEvent)} == {EventRef("syncs", 1)}
        sync_t = app.view.trace.tables["syncs"].data["t"][1]
        failure_t = app.view.trace.exceptions[0].t  # the finding's other evidence
        assert {m.frame for m in posted if isinstance(m, ShowEvent)} == {(sync_t, failure_t)}
        assert isinstance(app.screen, TimelineScreen)
        timeline = app.screen.query_one(Timeline)
        assert timeline.state.selected == EventRef("syncs", 1)
        assert timeline.lanes[timeline.state.lane].key == "syncs"


async def test_a_frame_is_the_finding_s_evidence_on_the_chosen_evidence_s_rank() -> None:
    posted: list[Message] = []
    app = app_for(report_for("dist_rank_capture_fails"))
    async with app.run_test(size=(120, 40), message_hook=posted.append) as pilot:
        await pilot.press("2", "enter")
        await settle(pilot)
        shown_event = next(m for m in posted if isinstance(m, ShowEvent))
        finding = app.view.findings[0]
        spans = [app.view.span_of(ref) for _, ref in app.view.evidence(finding)
                 if ref is not None and ref.rank == shown_event.ref.rank]
        assert shown_event.frame == (min(s[0] for s in spans if s), max(s[1] for s in spans if s))


async def test_a_finding_asked_for_before_its_screen_is_built_is_highlighted() -> None:
    app = app_for(report_for("dist_rank_capture_fails"))  # four findings: 2 is not the first
    async with app.run_test(size=(120, 40)) as pilot:
        app.post_message(ShowFinding(2))
        await settle(pilot)
        assert isinstance(app.screen, FindingsScreen) and app.screen.current == 2
        assert "GD403" in shown(app, "#finding-text")


async def test_a_ranks_verdict_posts_its_graph_and_the_graphs_table_shows_that_row() -> None:
    """Rank 0's verdict (unmeasured) opens its graph; rank 1's, failed, its finding."""
    posted: list[Message] = []
    app = app_for(report_for("dist_rank_capture_fails"))
    async with app.run_test(size=(120, 40), message_hook=posted.append) as pilot:
        await pilot.press("enter")
        await settle(pilot)
        assert {m.key for m in posted if isinstance(m, ShowGraph)} == {(0, 0)}
        assert isinstance(app.screen, GraphsScreen)
        assert app.screen.query_one("#graphs-table", DataTable).cursor_row == 0
        await pilot.press("1", "down", "enter")
        await settle(pilot)
        shown_finding = [m for m in posted if isinstance(m, ShowFinding)][-1]
        assert app.view.findings[shown_finding.index].rank == 1
        assert isinstance(app.screen, FindingsScreen)


async def test_an_event_asked_for_on_the_open_timeline_is_selected_there() -> None:
    app = demo_app()
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.press("3")
        await settle(pilot)
        timeline = app.screen
        app.post_message(ShowEvent(EventRef("exceptions", 0)))
        await settle(pilot)
        assert app.screen is timeline and selected(app) == EventRef("exceptions", 0)


async def test_search_hits_post_their_messages() -> None:
    posted: list[Message] = []
    app = demo_app()
    async with app.run_test(size=(100, 30), message_hook=posted.append) as pilot:
        await pilot.press("slash", *"GD101", "enter")
        await settle(pilot)
        assert {m.index for m in posted if isinstance(m, ShowFinding)} == {0}
        await pilot.press("ctrl+f", *"graph 0 torch.cuda", "enter")  # / filters Findings
        await settle(pilot)
        assert {m.key for m in posted if isinstance(m, ShowGraph)} == {(NONE, 0)}
        assert isinstance(app.screen, GraphsScreen)
        assert app.screen.query_one("#graphs-table", DataTable).cursor_row == 0


async def test_escape_goes_back_along_the_jumps_and_the_header_shows_the_way() -> None:
    """Findings → enter (its evidence on the timeline): one esc goes back to Findings, the
    event the jump selected left as it was; the way back is in the bar on top until it is
    walked. An event the user selects there is cleared by esc first."""
    app = demo_app("item_in_capture")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("2", "enter")
        await settle(pilot)
        assert isinstance(app.screen, TimelineScreen)
        assert app.sub_title.endswith("· esc: Findings")
        assert screen_text(app).startswith(" esc: Findings  1 Summary")
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, FindingsScreen) and "esc:" not in app.sub_title
        assert screen_text(app).startswith(" graphdoctor  1 Summary")
        await pilot.press("backspace")  # nothing further back: stays
        await settle(pilot)
        assert isinstance(app.screen, FindingsScreen)
        await pilot.press("enter", "k", "n")  # an event of the user's choosing: esc clears it
        await settle(pilot)
        timeline = app.screen.query_one(Timeline)
        assert timeline.state.selected is not None
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, TimelineScreen) and timeline.state.selected is None
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, FindingsScreen)


async def test_f1_opens_the_help() -> None:
    from graphdoctor.tui.screens.help import HelpScreen

    app = demo_app("item_in_capture")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("f1")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)


async def test_arrows_flow_from_the_verdicts_to_the_findings_and_back() -> None:
    app = app_for(report_for("dist_rank_capture_fails"))  # two verdicts, four findings
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("up")  # the first verdict: nowhere above it to go
        assert app.focused is not None and app.focused.id == "verdicts"
        await pilot.press("down", "down")  # past the last verdict: the findings
        assert app.focused is not None and app.focused.id == "top-findings"
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, FindingsScreen) and app.screen.current == 0
        await pilot.press("1", "up")  # back up from the first finding
        assert app.focused is not None and app.focused.id == "verdicts"
