"""The kernels a native program launched outside its graph (CUPTI's kernel activity, as an
H200 recorded it for the layer stack: 64 kernels a token, eagerly, before the graph ran the
same 64 per token) reach every reader: the report's table, the timeline's stream lane
beside the graph's launches and their nodes, the search by name, and the Chrome trace."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphdoctor.diagnose import diagnose
from graphdoctor.report.document import Report, build, from_json, to_json
from graphdoctor.report.render.chrome_trace import to_chrome_trace
from graphdoctor.report.schema import check
from graphdoctor.trace.model import Trace
from graphdoctor.tui.report_view import ReportView
from graphdoctor.tui.search import search_items, trail_of
from graphdoctor.tui.timeline.layout import Window, column_edges
from tests.native.helpers import recorded_lines, translated
from tests.report.test_chrome_trace import structure_problems


@pytest.fixture(scope="module")
def layer_stack(tmp_path_factory: pytest.TempPathFactory) -> tuple[Trace, Report]:
    trace, _ = translated(recorded_lines("native_layer_stack"), Path(tmp_path_factory.mktemp("n")))
    return trace, build(trace, diagnose(trace))


def test_each_eager_kernel_is_a_row_of_the_report(layer_stack: tuple[Trace, Report]) -> None:
    trace, report = layer_stack
    kernels = trace.tables["kernels"]
    assert len(kernels) == 12_800  # 64 a token, 200 tokens, as CUPTI gave them
    assert set(kernels.column("stream")) <= set(trace.tables["replays"].column("stream"))
    assert all(k.dur > 0 for k in kernels) and kernels.column("t") == sorted(kernels.column("t"))
    data = to_json(report)
    check(data)
    assert len(from_json(data).trace.tables["kernels"]) == 12_800


def test_the_timeline_draws_them_beside_the_graphs_launches(
        layer_stack: tuple[Trace, Report]) -> None:
    trace, report = layer_stack
    view = ReportView(report)
    [lane] = [lane for lane in view.lanes if any(s.source == "kernels" for s in lane.series)]
    sources = {s.source for s in lane.series}
    assert {"kernels", "replays"} <= sources and lane.key.startswith("stream:")
    step = trace.tables["kernels"][1]  # the first eager step (the first kernel ran alone)
    window = Window(step.t, step.t + 400_000)  # 400 µs: the 64 kernels of one token
    cells = lane.rows(column_edges(window, 80))[0][1]
    assert 40 < sum(glyph != " " for glyph, _ in cells) < 80  # kernels, and gaps between


def test_they_are_found_by_name(layer_stack: tuple[Trace, Report]) -> None:
    _, report = layer_stack
    items = search_items(ReportView(report))
    eager = [i for i, item in enumerate(items) if item.text.startswith("eager kernel ")]
    assert len(eager) >= 2  # each kernel name once, its events stepped through with n/N
    counts = [trail_of(items, i).count for i in eager]
    assert sum(counts) == 12_800


def test_the_chrome_trace_carries_them_on_their_streams(
        layer_stack: tuple[Trace, Report]) -> None:
    trace, report = layer_stack
    exported = to_chrome_trace(report)
    assert structure_problems(exported) == []
    events = exported["traceEvents"]
    lanes = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
             if e["name"] == "thread_name"}
    kernels = [e for e in events if e.get("cat") == "kernel"]
    assert len(kernels) == 12_800
    launches = [e for e in events if e.get("cat") == "gpu"]
    assert {lanes[(e["pid"], e["tid"])] for e in kernels} == \
        {lanes[(e["pid"], e["tid"])] for e in launches}  # one stream's track, side by side
    first = trace.tables["kernels"][0]
    assert kernels[0]["ts"] == pytest.approx(first.t / 1000, abs=1e-3)
    assert kernels[0]["dur"] == pytest.approx(first.dur / 1000, abs=1e-3)
    assert kernels[0]["name"] == first.name
