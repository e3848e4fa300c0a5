"""A number a graph froze, on the timeline, from a real GPU recording (frozen_lr_scheduler:
AdamW's lr captured at 1e-3 at line 66, inside the capture at line 62; LambdaLR's step at
line 79 sets it to 0 after three replays). The change is drawn on the main thread's lane,
where and when the scheduler stepped, in its own mark; selecting it names the line that
changed it, the capture that froze it and the finding it is evidence of."""

from __future__ import annotations

from graphdoctor.diagnose import diagnose
from graphdoctor.report.document import build
from graphdoctor.trace.assemble import assemble_file
from graphdoctor.trace.event_kinds import BY_NAME
from graphdoctor.trace.model import Trace
from graphdoctor.tui.events import EventRef, describe
from graphdoctor.tui.navigation import ShowEvent
from graphdoctor.tui.palette import kind_mark
from graphdoctor.tui.screens.timeline import TimelineScreen
from graphdoctor.tui.timeline.build import build_lanes
from graphdoctor.tui.widgets.timeline import Timeline
from tests.conftest import RECORDINGS
from tests.frozen_expectations import line_of
from tests.tui.helpers import app_for, settle, shown

SCRIPT = "frozen_lr_scheduler.py"
CHANGE = EventRef("frozen_values", 0)


def recorded() -> Trace:
    return assemble_file(RECORDINGS / "frozen_lr_scheduler.spool.jsonl.gz")


def test_the_change_is_drawn_on_the_main_thread_in_its_own_mark() -> None:
    trace = recorded()
    [lane] = [lane for lane in build_lanes(trace, trace.status.wall_ns)
              if any(s.source == "frozen_values" for s in lane.series)]
    [series] = [s for s in lane.series if s.source == "frozen_values"]
    assert lane.key == "cpu:0" and len(series) == 1
    assert series.mark == kind_mark(BY_NAME["frozen_values"]) and series.mark.glyph == "≡"


def test_its_details_name_the_line_that_changed_it_and_the_capture_that_froze_it() -> None:
    details = describe(recorded(), CHANGE)
    assert details.title == "param_groups[0]['lr'] is 0.0; graph 0 froze 0.001"
    capture = line_of(SCRIPT, "with torch.cuda.graph(g)")
    use = line_of(SCRIPT, "opt.step()", after="with torch.cuda.graph(g)")
    assert {("graph", f"0, captured at {SCRIPT}:{capture}"), ("held by", "optimizer of AdamW"),
            ("frozen at", f"{SCRIPT}:{use}"), ("seen", "scheduler")} <= set(details.fields)
    step = line_of(SCRIPT, "scheduler.step()", after="for step in range(REPLAYS)")
    assert (details.stack[-1].file.endswith(SCRIPT), details.stack[-1].line) == (True, step)


async def test_selecting_it_on_the_timeline_names_its_finding() -> None:
    trace = recorded()
    diagnosis = diagnose(trace)
    [title] = [f.title for f in diagnosis.findings if f.id == "GD305"]
    app = app_for(build(trace, diagnosis))
    async with app.run_test(size=(120, 40)) as pilot:
        app.post_message(ShowEvent(CHANGE))
        await settle(pilot)
        assert isinstance(app.screen, TimelineScreen)
        timeline = app.screen.query_one(Timeline)
        assert timeline.state.selected == CHANGE
        assert timeline.lanes[timeline.state.lane].key == "cpu:0"
        text = " ".join(shown(app, "#event-text").split())
        assert f"evidence of GD305 {title} (1 of 1)" in text
        capture = line_of(SCRIPT, "with torch.cuda.graph(g)")
        assert "graph 0 froze 0.001" in text and f"captured at {SCRIPT}:{capture}" in text
