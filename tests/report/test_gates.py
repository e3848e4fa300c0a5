"""--fail-on: conditions on a run, checked on saved reports and by graphdoctor run."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from graphdoctor.cli import main
from graphdoctor.errors import GraphDoctorError
from graphdoctor.report import gates, io
from graphdoctor.report.document import Report
from tests.conftest import ROOT
from tests.report.helpers import finding, real, verdict, with_diagnosis


def test_conditions_are_parsed_and_checked() -> None:
    assert gates.parse_conditions(" capture-failed, neutral,,GD101 ,neutral") == (
        "capture-failed", "neutral", "GD101")
    with pytest.raises(GraphDoctorError, match="unknown --fail-on condition 'fast'"):
        gates.parse_conditions("capture-failed,fast")
    with pytest.raises(GraphDoctorError, match="'GD101'"):
        gates.parse_conditions("GD101", gates.DIFF_CONDITIONS, rule_ids=False)


def _tripped(report: Report, *conditions: str) -> list[str]:
    return [t.condition for t in gates.check(report, conditions)]


@pytest.mark.parametrize(("name", "condition"), [
    ("item_in_capture", "capture-failed"), ("segfault_after_capture", "incomplete"),
    ("compile_graph_break", "graph-break"),
])
def test_trace_conditions_hold_without_any_diagnosis(name: str, condition: str) -> None:
    bare = with_diagnosis(real(name))
    assert _tripped(bare, condition) == [condition]
    assert _tripped(with_diagnosis(real("launch_bound")), condition) == []


@pytest.mark.parametrize(("kind", "condition"), [
    ("neutral", "neutral"), ("slower", "slower"), ("skipped", "skipped"),
    ("rerecorded", "rerecorded"), ("unsafe", "unsafe"), ("failed", "capture-failed"),
])
def test_verdict_conditions(kind: str, condition: str) -> None:
    report = with_diagnosis(real("launch_bound"), (verdict(kind=kind, summary=f"it is {kind}"),))
    assert _tripped(report, *gates.CONDITIONS) == [condition]
    assert f"it is {kind}" in gates.check(report, [condition])[0].reason


@pytest.mark.parametrize(("severity", "category", "expected"), [
    ("error", "wasteful", ["wasteful", "error", "warning", "GD999"]),
    ("warning", "unsafe", ["unsafe", "warning", "GD999"]),
    ("info", "neutral", ["neutral", "GD999"]),
])
def test_finding_conditions(severity: str, category: str, expected: list[str]) -> None:
    report = with_diagnosis(real("launch_bound"), (),
                            (finding(severity=severity, category=category),))
    assert _tripped(report, *gates.CONDITIONS, "GD999", "GD998") == expected


def test_a_clean_run_trips_nothing() -> None:
    assert _tripped(with_diagnosis(real("launch_bound"), (verdict(),)), *gates.CONDITIONS) == []


@pytest.mark.parametrize(("args", "code"), [
    (["--fail-on", "capture-failed"], gates.GATE_EXIT), (["--fail-on", "neutral"], 0),
    ([], 0), (["--fail-on", "bogus"], 2),
])
def test_report_command_gates_a_saved_report(tmp_path: Path, args: list[str], code: int) -> None:
    path = io.save(with_diagnosis(real("item_in_capture")), tmp_path / "r.json")
    result = CliRunner().invoke(main, ["report", str(path), *args])
    assert result.exit_code == code
    if code == gates.GATE_EXIT:
        assert re.match(r"graphdoctor: --fail-on capture-failed: capture of graph 0 .* failed",
                        " ".join(result.stderr.split()))  # at any width


def test_exit_codes_and_conditions_are_documented() -> None:
    readme = (ROOT / "README.md").read_text()
    first_screen = "\n".join(readme.splitlines()[:40])  # what a newcomer reads first
    assert readme.startswith("# graphdoctor") and "    pip install .\n" in first_screen
    assert "graphdoctor view --demo" in first_screen and "## Development" in readme
    section = readme[readme.index("## Reports and CI gates"):]
    for name in [*gates.CONDITIONS, *gates.DIFF_CONDITIONS]:
        assert f"`{name}`" in section, name
    assert f"| {gates.GATE_EXIT} |" in section
    for command in ("run", "report", "diff", "compare"):
        help_text = CliRunner().invoke(main, [command, "--help"]).output
        assert "Exit codes" in help_text and f"{gates.GATE_EXIT}  " in help_text
        assert "capture-failed" in help_text


def _run(tmp_path: Path, script: str, *options: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "script.py"
    path.write_text(script)
    return subprocess.run([sys.executable, "-m", "graphdoctor", "run", "-q", "-o",
                           str(tmp_path / "r.json"), *options, str(path), "--secret=hunter2"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)


@pytest.mark.slow
def test_run_passes_the_scripts_code_through_when_no_gate_trips(tmp_path: Path) -> None:
    done = _run(tmp_path, "import sys\nsys.exit(5)\n", "--fail-on", "capture-failed,incomplete",
                "--redact")
    assert done.returncode == 5, done.stderr
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["redacted"] is True and "hunter2" not in json.dumps(data)
    assert data["trace"]["meta"]["argv"][-1] == "<redacted>"


@pytest.mark.slow
def test_run_exits_with_the_gate_code_when_a_gate_trips(tmp_path: Path) -> None:
    done = _run(tmp_path, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n",
                "--fail-on", "incomplete")
    assert done.returncode == gates.GATE_EXIT
    assert "graphdoctor: --fail-on incomplete: the run was killed by SIGKILL" in done.stderr
    assert io.load(tmp_path / "r.json").trace.status.signal == 9  # the report is still written
