"""One owner per fact: the rules, the reports and the viewer read a derived fact from one
place (graphdoctor.facts.queries, graphdoctor.facts.locations, the verdict's measurements,
graphdoctor.units), so on every committed recording they give the same answer for the
same event. And in the code: whether a frame is graphdoctor's own (graphdoctor.own_code), a
frame as text (locations.frame_text), the culprit's kinds (queries.CULPRIT_KINDS), graphs
grouped by their site (facts.graph_sites) and a measurement's fields each have one owner,
and a second one fails the scans at the end of this file."""

from __future__ import annotations

import ast
import functools
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from graphdoctor.diagnose.view import TraceView
from graphdoctor.facts import locations, queries
from graphdoctor.report.document import Report
from graphdoctor.report.render.chrome_trace import to_chrome_trace, us
from graphdoctor.report.render.drawn_kinds import DRAWN_APART
from graphdoctor.trace.event_kinds import KINDS
from graphdoctor.trace.model import NONE, Trace
from graphdoctor.tui.capture_story import _where as story_line
from graphdoctor.tui.events import EventRef, describe
from graphdoctor.tui.rendering import stack_text
from graphdoctor.tui.report_view import ReportView
from graphdoctor.tui.same_line import line_of
from graphdoctor.tui.step_compare.figures import story_for
from tests.reports import is_distributed, report_for, scenario_names

SINGLE = [name for name in scenario_names() if not is_distributed(name)]
Line = tuple[str, int] | None


@functools.cache
def report(name: str) -> Report:
    return report_for(name)


def rule_line(trace: Trace, stack: int) -> Line:
    """The line a finding names (its location)."""
    found = TraceView(trace).location(stack)
    return (found.file, found.line) if found else None


def viewer_lines(trace: Trace, index: int) -> set[Line]:
    """The lines the viewer names for one sync: the line whose events it underlines, the
    capture story's line, and the frame it marks ▶ in the details pane's stack (which
    shows the innermost frames only: a user frame further out is not marked)."""
    details = describe(trace, EventRef("syncs", index))
    frame = queries.culprit_of(details.stack)
    told = story_line(trace, trace.tables["syncs"][index].stack)
    assert told == (locations.frame_text(frame, trace.meta.cwd) if frame else "")
    named = {line_of(details.stack), (frame.file, frame.line) if frame else None}
    marked = [row for row in stack_text(details.stack, "").plain.splitlines()
              if row.startswith("▶ ")]
    if marked:
        assert frame is not None and marked == [f"▶ {locations.frame_text(frame)}"]
    return named


def exported_sites(report: Report) -> Counter[tuple[float, str]]:
    """The Chrome trace's sync instants: (when, the site it names)."""
    events = to_chrome_trace(report)["traceEvents"]
    return Counter((e["ts"], e["args"]["site"]) for e in events if e.get("cat") == "sync")


@pytest.mark.parametrize("name", SINGLE)
def test_every_sync_names_one_user_line_in_the_rules_the_report_and_the_viewer(name: str) -> None:
    trace = report(name).trace
    expected: Counter[tuple[float, str]] = Counter()
    for index, sync in enumerate(trace.tables["syncs"]):
        line = rule_line(trace, sync.stack)
        assert viewer_lines(trace, index) == {line}, (index, sync)
        site = locations.site(trace, sync.stack)
        path = "" if line is None else locations.display_path(line[0], trace.meta.cwd)
        assert site == ("" if line is None else f"{path}:{line[1]}")
        expected[(us(sync.t), site)] += 1
    assert exported_sites(report(name)) == expected


def test_a_stack_of_library_frames_only_names_the_library_line_everywhere() -> None:
    """real_hf_static_cache_generate syncs inside transformers with no frame of the script
    on the stack: every reader names the library's line (once, the report named torch's)."""
    trace = report("real_hf_static_cache_generate").trace
    library_only = [i for i, s in enumerate(trace.tables["syncs"])
                    if {f.kind for f in trace.stack(s.stack)} >= {"lib"}
                    and "user" not in {f.kind for f in trace.stack(s.stack)}]
    for index in library_only:
        stack = trace.tables["syncs"][index].stack
        line = rule_line(trace, stack)
        assert line is not None and "site-packages/" in line[0]
        assert viewer_lines(trace, index) == {line}


@pytest.mark.parametrize("name", ["sync_between_replays", "cupy_sync_between_replays"])
def test_gd203_counts_the_syncs_between_replays_the_viewer_shows(name: str) -> None:
    found = [f for f in report(name).diagnosis.findings if f.id == "GD203"]
    story = story_for(ReportView(report(name), name), NONE, 0)
    assert found and story is not None
    assert sum(f.measurements["syncs"] for f in found) == story.syncs
    by_rule = {(f.location.file, f.location.line): f.measurements["syncs"]
               for f in found if f.location}
    trace = report(name).trace
    between = queries.syncs_between_replays(trace, trace.graphs[0])
    by_viewer = {line: len(rows) for line, rows in queries.syncs_by_line(trace, between).items()}
    assert by_rule == by_viewer
    assert [s.count for s in story.sync_sources] == sorted(by_rule.values(), reverse=True)[:3]


@pytest.mark.parametrize("name", SINGLE)
def test_a_graphs_syncs_between_replays_are_the_users_of_its_replay_window(name: str) -> None:
    trace = report(name).trace
    rule_counted = {i for i, _ in queries.syncs_between_any_replays(trace)}
    for index, graph in enumerate(trace.graphs):
        story = story_for(ReportView(report(name), name), NONE, index)
        between = queries.syncs_between_replays(trace, graph)
        assert story is not None and story.syncs == len(between)
        assert {i for i, _ in between} <= rule_counted


def test_every_kind_is_drawn_apart_or_from_the_registry_in_both_pictures() -> None:
    names = {kind.name for kind in KINDS}
    assert DRAWN_APART <= names


# -- one owner in the code: a second one appearing fails here ------------------------------
PACKAGE = Path(__file__).resolve().parent.parent / "graphdoctor"


@functools.cache
def modules() -> dict[str, ast.Module]:
    """Every module of graphdoctor, parsed, by its path inside the package."""
    return {path.relative_to(PACKAGE).as_posix(): ast.parse(path.read_text())
            for path in sorted(PACKAGE.rglob("*.py"))}


def nodes_elsewhere(owner: str, kind: type[ast.AST]) -> Iterator[tuple[str, ast.AST]]:
    """(module, node) for each node of ``kind`` in a module other than ``owner``."""
    for name, tree in modules().items():
        if name != owner:
            yield from ((name, node) for node in ast.walk(tree) if isinstance(node, kind))


def docstrings() -> set[int]:
    return {id(node.body[0].value) for tree in modules().values()
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef)
            and node.body and isinstance(node.body[0], ast.Expr)}


def test_only_own_code_tells_graphdoctors_own_files() -> None:
    """No path text naming the package, and no package folder found from ``__file__``
    (``dirname(dirname(__file__))``), outside graphdoctor.own_code."""
    skipped = docstrings()
    named = [name for name, node in nodes_elsewhere("own_code.py", ast.Constant)
             if isinstance(node.value, str) and id(node) not in skipped
             and "graphdoctor/" in node.value.replace("\\", "/")]
    folders = [name for name, node in nodes_elsewhere("own_code.py", ast.Call)
               if ast.unparse(node).startswith("os.path.dirname(os.path.dirname(")
               and "__file__" in ast.unparse(node)]
    assert named == [] and folders == []


def test_a_frame_is_written_as_text_by_locations_alone() -> None:
    """``{file}:{line} in {function}`` is written by locations.frame_text alone."""
    def writes_a_frame(node: ast.JoinedStr) -> bool:
        parts = [v.value if isinstance(v, ast.Constant) else None for v in node.values]
        return any(parts[i:i + 3] == [None, ":", None] and parts[i + 3:i + 5] == [" in ", None]
                   for i in range(len(parts)))
    found = [name for name, node in nodes_elsewhere("facts/locations.py", ast.JoinedStr)
             if writes_a_frame(node)]  # type: ignore[arg-type]
    assert found == []


def test_the_culprit_kinds_are_named_in_queries_alone() -> None:
    """No second (USER, LIBRARY) policy: every other module imports CULPRIT_KINDS."""
    found = [name for name, node in nodes_elsewhere("facts/queries.py", ast.Tuple)
             if [ast.unparse(e) for e in node.elts] == ["USER", "LIBRARY"]]  # type:
             # ignore[attr-defined]
    assert found == []


def test_graphs_are_grouped_by_graph_sites_alone() -> None:
    """GROUP_FROM is compared, and a graph's site made, in facts.graph_sites only."""
    found = [name for name, node in nodes_elsewhere("facts/graph_sites.py", ast.Name)
             if node.id == "GROUP_FROM"]  # type: ignore[attr-defined]
    sites = [name for name, node in nodes_elsewhere("facts/graph_sites.py", ast.Call)
             if ast.unparse(node).endswith("where(trace, graph.stack)")]
    assert found == [] and sites == []


def test_measurements_are_never_read_by_a_literal_key() -> None:
    """``x.measurements["replays"]`` and ``.get("speedup")`` name their field through the
    module that writes it (measure.REPLAYS, a rule's own constant)."""
    found = []
    for name, node in nodes_elsewhere("", ast.Subscript):
        if ast.unparse(node.value).endswith(".measurements") and \
                isinstance(node.slice, ast.Constant):  # type: ignore[attr-defined]
            found.append(name)
    for name, node in nodes_elsewhere("", ast.Call):
        if ast.unparse(node.func).endswith(".measurements.get") and node.args and \
                isinstance(node.args[0], ast.Constant):  # type: ignore[attr-defined]
            found.append(name)
    assert found == []
