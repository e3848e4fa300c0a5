"""A kind added end to end in four files (its row and entry in trace/event_kinds.py, the
supervisor that records it, its rule and the rules' list): processes the script left
running, over a real GPU recording with two of them appended, as the supervisor appends
them. Every reader takes it with no change of its own."""

from __future__ import annotations

from graphdoctor.diagnose import diagnose
from graphdoctor.report.document import build, from_json, to_json
from graphdoctor.report.render.chrome_trace import to_chrome_trace
from graphdoctor.report.render.text import render_text
from graphdoctor.report.schema import check
from graphdoctor.trace.assemble import assemble
from graphdoctor.trace.event_kinds import LeftRunning
from graphdoctor.trace.model import Trace
from graphdoctor.trace.spool.file import read_records
from graphdoctor.trace.spool.records import encode
from graphdoctor.tui.screens.summary import event_counts
from graphdoctor.tui.timeline.build import build_lanes
from tests.conftest import RECORDINGS

LEFT = [LeftRunning(9_000_000_000, 4242, "sleep", 0), LeftRunning(9_000_000_000, 4243, "ffmpeg", 1)]


def with_leftovers() -> Trace:
    records = list(read_records(RECORDINGS / "launch_bound.spool.jsonl.gz"))
    return assemble([*records, *(encode(row) for row in LEFT)])


def test_the_rule_names_each_process_and_what_outlived_sigkill() -> None:
    [finding] = [f for f in diagnose(with_leftovers()).findings if f.name == "left-running"]
    assert finding.id == "GD407" and finding.severity == "warning"
    assert finding.title == ("the script left 2 processes running when it ended "
                             "(pid 4242: sleep, pid 4243: ffmpeg)")
    assert "1 process outlived SIGKILL" in finding.explanation
    assert [(e.kind, e.index) for e in finding.evidence] == [("left_running", 0),
                                                            ("left_running", 1)]


def test_the_report_carries_and_counts_them() -> None:
    trace = with_leftovers()
    report = build(trace, diagnose(trace))
    data = to_json(report)
    check(data)
    assert list(from_json(data).trace.tables["left_running"]) == LEFT
    assert "GD407 left-running" in render_text(report, width=200)
    lane = [e for e in to_chrome_trace(report)["traceEvents"] if e.get("cat") == "left_running"]
    assert len(lane) == 2


def test_the_tui_counts_and_draws_them() -> None:
    trace = with_leftovers()
    assert "2 processes left running" in event_counts(trace)
    drawn = [s for lane in build_lanes(trace, trace.status.wall_ns) for s in lane.series
             if s.source == "left_running"]
    assert len(drawn) == 1 and len(drawn[0]) == 2


def test_a_run_that_leaves_nothing_gets_no_finding() -> None:
    records = read_records(RECORDINGS / "launch_bound.spool.jsonl.gz")
    assert not [f for f in diagnose(assemble(records)).findings if f.name == "left-running"]
