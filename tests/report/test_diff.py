"""graphdoctor diff: what changed between two runs, and which changes are regressions."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from graphdoctor.cli import main
from graphdoctor.report import gates, io
from graphdoctor.report.diff import compare, to_json
from graphdoctor.report.document import Report
from graphdoctor.report.redact import redact
from graphdoctor.report.render.diff import render_diff_markdown, render_diff_text
from tests.report.helpers import NAMES, finding, real, verdict, with_diagnosis


@pytest.mark.parametrize("name", NAMES)
def test_a_run_compared_with_itself_has_no_changes(name: str) -> None:
    result = compare(real(name), real(name))
    assert result.regressions == ()
    assert result.appeared == [] and result.gone == []
    assert all(not c.kind_changed for c in result.verdicts)
    assert all(f.before == f.after for f in result.figures)


def test_redaction_changes_nothing_a_diff_looks_at() -> None:
    report = real("compile_graph_break")
    result = compare(report, redact(report))
    assert result.regressions == () and result.appeared == [] and result.gone == []


def _pair(before: tuple, after: tuple, name: str = "launch_bound") -> tuple[Report, Report]:
    return (with_diagnosis(real(name), before[0], before[1]),
            with_diagnosis(real(name), after[0], after[1]))


def test_a_worse_verdict_and_a_lower_speedup_are_regressions() -> None:
    a, b = _pair(((verdict(),), ()), ((verdict(kind="neutral", speedup=1.01),), ()))
    result = compare(a, b)
    assert [r.condition for r in result.regressions] == ["verdict-worse", "speedup-drop"]
    assert "faster → neutral" in result.regressions[0].reason
    assert result.verdicts[0].speedup_change == pytest.approx(1.01 / 4 - 1)


@pytest.mark.parametrize(("after", "tolerance", "regressed"), [
    (3.7, 0.10, False), (3.5, 0.10, True), (3.5, 0.20, False), (5.0, 0.0, False),
])
def test_the_speedup_tolerance(after: float, tolerance: float, regressed: bool) -> None:
    a, b = _pair(((verdict(),), ()), ((verdict(speedup=after),), ()))
    conditions = [r.condition for r in compare(a, b, tolerance=tolerance).regressions]
    assert ("speedup-drop" in conditions) is regressed


def test_verdicts_match_by_graph_when_the_subject_moved() -> None:
    a, b = _pair(((verdict(subject="graph 0 at x.py:10"),), ()),
                 ((verdict(subject="graph 0 at x.py:12", kind="failed", speedup=None),), ()))
    result = compare(a, b)
    assert len(result.verdicts) == 1 and result.verdicts[0].kind_changed
    assert [r.condition for r in result.regressions] == ["verdict-worse"]


def test_a_better_verdict_is_a_change_but_no_regression() -> None:
    a, b = _pair(((verdict(kind="failed", speedup=None),), ()), ((verdict(),), ()))
    result = compare(a, b)
    assert result.regressions == ()
    assert [t.condition for t in gates.check_diff(result, ["verdict-changed", "regression"])] \
        == ["verdict-changed"]


def test_findings_that_appear_and_go_away() -> None:
    kept, gone, new = finding(id="GD001"), finding(id="GD002"), finding(id="GD003", severity="info")
    worse = finding(id="GD004", severity="warning")
    a, b = _pair(((), (kept, gone)), ((), (kept, new, worse)))
    result = compare(a, b)
    assert {c.finding.id for c in result.appeared} == {"GD003", "GD004"}
    assert [c.finding.id for c in result.gone] == ["GD002"]
    assert [r.condition for r in result.regressions] == ["new-finding"]  # info does not count
    assert "GD004" in result.regressions[0].reason


def test_a_finding_whose_line_moved_is_the_same_finding() -> None:
    moved = dataclasses.replace(finding(), location=dataclasses.replace(
        finding().location, line=finding().location.line + 7))
    a, b = _pair(((), (finding(),)), ((), (moved,)))
    assert compare(a, b).appeared == []


def test_a_capture_that_now_fails_is_a_regression_even_without_rules() -> None:
    healthy = with_diagnosis(real("launch_bound"))
    broken = with_diagnosis(real("item_in_capture"))
    result = compare(healthy, broken)
    assert "capture-failed" in [r.condition for r in result.regressions]
    assert ("outcome", "exited with code 0", "exited with code 1") in result.run
    assert ("script", healthy.trace.meta.target, broken.trace.meta.target) in result.run


def test_a_run_that_no_longer_completes_is_a_regression() -> None:
    result = compare(with_diagnosis(real("empty_graph")),
                     with_diagnosis(real("segfault_after_capture")))
    assert "incomplete" in [r.condition for r in result.regressions]


def test_more_graph_breaks_are_a_regression() -> None:
    result = compare(with_diagnosis(real("compile_healthy")),
                     with_diagnosis(real("compile_graph_break")))
    assert any(r.condition == "compile" and "graph break" in r.reason for r in result.regressions)


def test_environment_changes_are_listed() -> None:
    a = real("launch_bound")
    meta = dataclasses.replace(a.trace.meta, torch="2.13.0", python="3.11.7")
    b = dataclasses.replace(a, trace=dataclasses.replace(a.trace, meta=meta))
    changes = {name: (x, y) for name, x, y in compare(a, b).environment}
    assert changes == {"torch": (a.trace.meta.torch, "2.13.0"),
                       "Python": (a.trace.meta.python, "3.11.7")}


def test_renderings_say_the_same_things() -> None:
    a, b = _pair(((verdict(),), (finding(id="GD002"),)),
                 ((verdict(kind="neutral", speedup=1.0),), (finding(id="GD001"),)))
    result = compare(a, b, "main.json", "branch.json")
    text, markdown = render_diff_text(result, width=200), render_diff_markdown(result)
    data = to_json(result)
    for rendered in (text, markdown):
        assert "main.json" in rendered and "branch.json" in rendered
        assert "faster 4.00×" in rendered and "neutral 1.00×" in rendered
        assert "GD001" in rendered and "GD002" in rendered
    assert data["format"] == "graphdoctor-diff" and data["regression"] is True
    assert [f["id"] for f in data["findings"]["appeared"]] == ["GD001"]
    assert [f["id"] for f in data["findings"]["gone"]] == ["GD002"]
    json.dumps(data, allow_nan=False)


@pytest.fixture
def run_pair(tmp_path: Path) -> tuple[Path, Path]:
    a, b = _pair(((verdict(),), ()), ((verdict(kind="neutral", speedup=1.0),), ()))
    return io.save(a, tmp_path / "a.json"), io.save(b, tmp_path / "b.json.gz")


@pytest.mark.parametrize(("args", "code"), [
    ([], 0), (["--fail-on", "regression"], gates.GATE_EXIT),
    (["--fail-on", "new-finding"], 0), (["--fail-on", "speedup-drop", "--tolerance", "80"], 0),
    (["--fail-on", "nonsense"], 2),
])
def test_diff_exit_codes(run_pair: tuple[Path, Path], args: list[str], code: int) -> None:
    a, b = run_pair
    result = CliRunner().invoke(main, ["diff", str(a), str(b), *args])
    assert result.exit_code == code, result.output
    if code == gates.GATE_EXIT:
        assert result.stderr.startswith("graphdoctor: --fail-on regression: ")


def test_diff_formats(run_pair: tuple[Path, Path], tmp_path: Path) -> None:
    a, b = run_pair
    as_json = CliRunner().invoke(main, ["diff", str(a), str(b), "-f", "json"])
    assert json.loads(as_json.stdout)["regression"] is True
    out = tmp_path / "diff.md"
    CliRunner().invoke(main, ["diff", str(a), str(b), "-f", "markdown", "-o", str(out)])
    assert out.read_text().startswith("### graphdoctor diff: ")
    text = CliRunner().invoke(main, ["diff", str(a), str(b)])
    assert "Regressions (2)" in text.stdout and "\x1b[" not in text.stdout
