"""What the details pane says about recorded events, and where evidence points."""

from __future__ import annotations

from graphdoctor.diagnose.findings import Evidence
from graphdoctor.facts.locations import package_path
from graphdoctor.facts.queries import culprit_of
from graphdoctor.facts.stream_names import stream_names
from graphdoctor.trace.model import Frame
from graphdoctor.tui.aggregate import graph_rows
from graphdoctor.tui.events import (
    EventRef,
    describe,
    event_span,
    exists,
    ref_from_evidence,
    source_context,
)
from graphdoctor.tui.screens.graphs import timings_text
from graphdoctor.units import NOT_MEASURED_WORDS
from tests.reports import report_for


def test_the_culprit_sync_names_its_phase_graph_and_user_line() -> None:
    report = report_for("item_in_capture")
    details = describe(report.trace, EventRef("syncs", 1))
    assert details.title == "sync: item"
    assert ("phase", "capture") in details.fields and ("graph", "0") in details.fields
    frame = culprit_of(details.stack)
    assert frame is not None and frame.file.endswith("item_in_capture.py") and frame.line == 15


def test_an_exception_lists_its_chain_root_first() -> None:
    trace = report_for("item_in_capture").trace
    details = describe(trace, EventRef("exceptions", 1))
    chain = [value for name, value in details.fields if name.startswith("chain")]
    assert "cudaErrorStreamCaptureUnsupported" in chain[0]
    assert "cudaErrorStreamCaptureInvalidated" in chain[-1]
    assert "previous error during capture" in details.title


def test_every_kind_of_event_can_be_described() -> None:
    trace = report_for("compile_dynamic_shapes").trace
    kinds = [*trace.tables, "exceptions", "compile_events", "warnings", "input_events", "graphs",
             "phases", "functions"]
    for kind in kinds:
        if exists(trace, EventRef(kind, 0)):
            assert describe(trace, EventRef(kind, 0)).title


def test_spans() -> None:
    trace = report_for("launch_bound").trace
    graph = trace.graphs[0]
    assert event_span(trace, EventRef("graphs", 0)) == (graph.capture_start, graph.capture_end)
    replay = trace.tables["replays"][0]
    assert event_span(trace, EventRef("replays", 0)) == (replay.t,
                                                        replay.t + max(replay.dur, replay.gpu))
    assert event_span(trace, EventRef("syncs", 10**6)) is None


def test_evidence_outside_the_trace_points_nowhere() -> None:
    trace = report_for("item_in_capture").trace
    assert ref_from_evidence(trace, Evidence("syncs", 1)) == EventRef("syncs", 1)
    assert ref_from_evidence(trace, Evidence("syncs", 99)) is None
    assert ref_from_evidence(trace, Evidence("no_such_table", 0)) is None


def test_streams_are_named_default_then_by_first_use() -> None:
    trace = report_for("item_in_capture").trace
    names = stream_names(trace)
    assert names[0] == "default"
    assert names[trace.graphs[0].stream] == "s2"


def test_source_context_marks_the_target_line() -> None:
    report = report_for("item_in_capture")
    file = report.trace.graphs[0] and next(iter(report.sources))
    lines = source_context(report, file, 15, radius=1)
    assert [(line.number, line.is_target) for line in lines] == [(14, False), (15, True),
                                                                 (16, False)]
    assert "item()" in lines[1].text


def test_paths_are_shortened() -> None:
    assert package_path("/work/proj/train.py", "/work/proj") == "train.py"
    assert package_path("/x/lib/python3.12/site-packages/torch/_ops.py") == "torch/_ops.py"
    assert culprit_of([Frame("a.py", 1, "f", "torch")]) is None


def test_a_stream_has_one_name_in_its_finding_its_lane_and_its_events() -> None:
    from graphdoctor.tui.report_view import ReportView

    report = report_for("unjoined_side_stream")
    side = next(lane for lane in ReportView(report).lanes if lane.label.endswith(" side"))
    name, stream = side.label.split()[0], int(side.key.split(":")[1])
    label = f"{name} ({stream:#x})"  # "s1 (0x3ce36b40)"
    [unjoined] = [f for f in report.diagnosis.findings if f.id == "GD103"]
    assert unjoined.explanation.startswith(f"Stream {label} ")
    ops = report.trace.tables["stream_ops"]
    fork = next(i for i, op in enumerate(ops) if op.stream == stream)
    assert describe(report.trace, EventRef("stream_ops", fork)).title.endswith(f"on {label}")


def test_a_launch_cupti_saw_says_its_host_time_was_not_measured() -> None:
    """CUPTI times a launch on the GPU only: the pane says so rather than "0 ns", in the
    words the graph's screen uses too."""
    trace = report_for("cupy_capture").trace
    details = dict(describe(trace, EventRef("replays", 0)).fields)
    assert details["host"] == NOT_MEASURED_WORDS and details["GPU"].endswith("µs")
    [row] = graph_rows(trace)
    said = timings_text(row.replays, row.eager).plain
    assert said.startswith(f"250 replays, medians: host {NOT_MEASURED_WORDS}, GPU 215 µs")
    assert "0 ns" not in said


def test_an_instantiation_shows_how_long_it_took_and_the_line_that_asked() -> None:
    trace = report_for("cupy_capture").trace
    details = describe(trace, EventRef("instantiations", 0))
    assert details.title == "graph instantiation" and ("graph", "0") in details.fields
    assert details.end is not None and details.start is not None and details.end > details.start
    frame = culprit_of(details.stack)
    assert frame is not None and frame.file.endswith("cupy_capture.py") and frame.line == 41
