"""A kind of event declared in the registry reaches every reader with no change of its own:
shown with the garbage collections (``gc_pauses``), added in three files (its spool record,
its row and registry entry, and the recorder source that writes it)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from graphdoctor.diagnose import diagnose
from graphdoctor.facts.tallies import event_counts, event_summary
from graphdoctor.report.document import build, from_json, to_json
from graphdoctor.report.render.chrome_trace import to_chrome_trace
from graphdoctor.report.schema import check
from graphdoctor.trace.assemble import assemble
from graphdoctor.trace.event_kinds import BY_NAME
from graphdoctor.trace.model import CAPTURE, Trace
from graphdoctor.trace.spool.file import read_records
from graphdoctor.tui.events import EventRef, describe
from graphdoctor.tui.palette import kind_mark
from graphdoctor.tui.screens.summary import event_counts as summary_counts
from graphdoctor.tui.timeline.build import build_lanes

RECORDINGS = Path(__file__).parents[2] / "fixtures" / "recordings"
RECORDING = RECORDINGS / "launch_bound.spool.jsonl.gz"
OLDER = RECORDINGS / "compile_mutated_input.spool.jsonl.gz"  # recorded before gc_pauses
GC = BY_NAME["gc_pauses"]


def _with_collections() -> Trace:
    """The launch_bound recording with two collections spliced in: a full one inside the
    capture, and a long young one after it."""
    records = [r for r in read_records(RECORDING) if r[0] != "gc"]  # its own collections
    capture = next(r[1] for r in records if r[0] == "graph")
    end = next(r[1] for r in records if r[0] == "graph_end")
    records += [["gc", (capture["t"] + end["t"]) // 2, 4_000_000, 2, 1234, 0],  # the user's time
                ["gc", end["t"] + 10, 250_000, 0, 7, 0]]
    return assemble(records)


def test_assembly_reads_the_rows_and_their_phases() -> None:
    trace = _with_collections()
    rows = list(trace.tables["gc_pauses"])
    assert [(r.generation, r.collected, r.dur) for r in rows] == [(2, 1234, 4_000_000),
                                                                  (0, 7, 250_000)]
    assert rows[0].phase == CAPTURE


def test_reports_count_and_carry_them() -> None:
    trace = _with_collections()
    assert event_counts(trace)["gc_pauses"] == 2
    assert "2 garbage collections" in event_summary(trace)
    report = build(trace, diagnose(trace))
    data = to_json(report)
    check(data)
    assert len(from_json(data).trace.tables["gc_pauses"]) == 2


def test_the_chrome_export_gives_them_a_lane() -> None:
    trace = _with_collections()
    events = to_chrome_trace(build(trace, diagnose(trace)))["traceEvents"]
    lane = [e for e in events if e.get("cat") == "gc_pauses"]
    assert [e["name"] for e in lane] == ["garbage collection: 2", "garbage collection: 0"]
    assert lane[0]["args"]["collected"] == 1234 and lane[0]["dur"] == 4000.0


def test_the_tui_counts_describes_and_draws_them() -> None:
    trace = _with_collections()
    assert "2 garbage collections" in summary_counts(trace)
    details = describe(trace, EventRef("gc_pauses", 0))
    assert details.title == "garbage collection: 2"
    assert ("collected", "1234") in details.fields
    series = [s for lane in build_lanes(trace, trace.status.wall_ns) for s in lane.series
              if s.source == "gc_pauses"]
    assert len(series) == 1 and len(series[0]) == 2
    assert series[0].mark == kind_mark(GC)


def test_an_older_recording_has_none() -> None:
    with gzip.open(OLDER, "rt") as handle:
        assert not any(json.loads(line)[0] == "gc" for line in handle if line.strip())
    trace = assemble(read_records(OLDER))
    assert len(trace.tables["gc_pauses"]) == 0
