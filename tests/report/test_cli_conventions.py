"""Conventions every command keeps: one error style (click's usage errors included, with a
hint where another tool's habit explains the mistake), ``--color`` and the colour
variables, and JSON on stdout that stays JSON whatever the script prints."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from graphdoctor.cli import main
from graphdoctor.cli.colour import wanted
from tests.conftest import RECORDINGS

REPORT = RECORDINGS / "launch_bound.json"  # a fixture's note: followed to its recording


def invoke(*args: object, env: dict[str, str] | None = None) -> Result:
    return CliRunner(env=env).invoke(main, [str(a) for a in args], catch_exceptions=False,
                                     prog_name="graphdoctor")


def one_error_line(result: Result) -> str:
    assert result.exit_code == 2, result.output
    [line] = result.stderr.splitlines()
    assert line.startswith("graphdoctor: error: ") and result.stdout == ""
    return line


@pytest.mark.parametrize(("args", "said"), [
    (["report"], "missing argument 'REPORT...'; see graphdoctor report --help"),
    (["report", "--bogus", "x"], "no such option '--bogus'; see graphdoctor report --help"),
    (["reprot"], "no such command 'reprot' (did you mean one of: 'export', 'report'?)"),
    (["report", "-f", "xml", "x"], "invalid value for '-f' / '--format': 'xml' is not one"),
    (["report", "--color", "sometimes", "x"], "invalid value for '--color'"),
    (["explain", "sync-in-captur"], "no rule named 'sync-in-captur' (did you mean "
                                    "sync-in-capture"),
])
def test_usage_errors_are_one_line_and_exit_2(args: list[str], said: str) -> None:
    assert said in one_error_line(invoke(*args))


@pytest.mark.parametrize(("args", "said"), [
    (["fix", "--rule", "GD999", REPORT], "invalid value for '--rule': no rule named 'GD999' "
                                         "(did you mean GD309, GD209, GD109?)"),
    (["fix", "--rule", "bogus", REPORT], "no rule named 'bogus'; graphdoctor rules lists them"),
    (["fix", "--rule", "GD201", REPORT], "GD201 gpu-bound has no patch; rules with a patch: "
                                         "GD101, "),
    (["explain", "GD999"], "no rule named 'GD999' (did you mean GD309, GD209, GD109?)"),
    (["report", "--fail-on", "GD999", REPORT], "invalid value for '--fail-on': no rule named "
                                               "'GD999' (did you mean"),
    (["report", "--fail-on", "neutral,GD501", REPORT], "'GD501' (did you mean GD401"),
    (["report", "--fail-on", "nuetral", REPORT], "'nuetral' (did you mean neutral?)"),
    (["diff", "--fail-on", "regresion", REPORT, REPORT], "(did you mean regression?)"),
])
def test_an_unknown_rule_or_condition_is_a_usage_error_naming_the_nearest(
        args: list[str], said: str) -> None:
    assert said in one_error_line(invoke(*args))


def test_a_rule_is_named_by_its_id_or_name_either_case() -> None:
    for rule in ("gd101", "sync-in-capture", "GD101"):
        result = invoke("fix", "--rule", rule, REPORT)
        assert result.exit_code == 1 and "no finding of this report has a patch" in result.stderr
    assert invoke("report", "--fail-on", "gd201,GD000", REPORT).exit_code == 0


def test_graphdoctor_alone_prints_the_help_and_exits_0() -> None:
    alone, helped = invoke(), invoke("--help")
    assert alone.exit_code == 0 and alone.stderr == ""
    assert alone.stdout == helped.stdout and alone.stdout.startswith("Usage: graphdoctor")


def test_a_rule_name_not_close_to_any_points_to_the_list() -> None:
    line = one_error_line(invoke("explain", "BAD"))
    assert line == "graphdoctor: error: no rule named 'BAD'; graphdoctor rules lists them"


@pytest.mark.parametrize("interpreter", ["python", "python3", "python3.12", sys.executable])
def test_naming_python_before_the_script_is_answered_with_the_command_meant(
        interpreter: str) -> None:
    line = one_error_line(invoke("run", interpreter, "train.py", "--lr", "3"))
    assert line.endswith("is Python, not a script; graphdoctor starts Python itself: "
                         "graphdoctor run train.py --lr 3")
    module = one_error_line(invoke("compare", interpreter, "-m", "pkg.serve"))
    assert module.endswith("graphdoctor run -m pkg.serve")


def test_help_and_version_still_exit_0() -> None:
    assert invoke("--version").exit_code == 0 and invoke("report", "--help").exit_code == 0
    assert "--color [auto|always|never]" in invoke("merge", "--help").stdout


@pytest.mark.parametrize(("environ", "tty", "colour"), [
    ({}, True, True), ({}, False, False),
    ({"NO_COLOR": "1"}, True, False), ({"NO_COLOR": ""}, True, True),  # empty: not set
    ({"FORCE_COLOR": "1"}, False, True), ({"FORCE_COLOR": ""}, False, False),
    ({"NO_COLOR": "1", "FORCE_COLOR": "1"}, True, False),
    ({"TERM": "dumb"}, True, False), ({"TERM": "dumb", "FORCE_COLOR": "1"}, True, True),
])
def test_auto_colour_follows_the_conventions(environ: dict[str, str], tty: bool,
                                             colour: bool) -> None:
    assert wanted(environ, tty) is colour


def escapes(result: Result) -> bool:
    assert result.exit_code == 0, result.output
    return "\x1b[" in result.stdout


def test_color_always_never_and_force_color_on_a_pipe() -> None:
    assert escapes(invoke("report", REPORT, "--color", "always"))
    assert not escapes(invoke("report", REPORT))  # a pipe: auto says no
    assert escapes(invoke("report", REPORT, env={"FORCE_COLOR": "1"}))
    assert not escapes(invoke("report", REPORT, "--color", "never", env={"FORCE_COLOR": "1"}))
    assert not escapes(invoke("report", REPORT, env={"FORCE_COLOR": "1", "NO_COLOR": "1"}))


def test_a_fixture_note_is_read_as_its_recording_and_says_so() -> None:
    result = invoke("diff", REPORT, RECORDINGS / "gpu_bound.json")
    assert result.exit_code in (0, 3), result.output
    assert "read " in result.stderr and "launch_bound.spool.jsonl.gz" in result.stderr
    assert "speedup 7.54× → 1.00×" in " ".join(result.stdout.split())  # at any width


@pytest.mark.slow
def test_compare_json_on_stdout_is_json_whatever_the_script_prints(tmp_path: Path) -> None:
    script = tmp_path / "chatty.py"
    script.write_text("print('step 1: loss 0.5')\nprint('{not json')\n")
    done = subprocess.run([sys.executable, "-m", "graphdoctor", "compare", "-q", "-f", "json",
                           "--repeats", "1", str(script)], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["target"].endswith("chatty.py")
    assert "step 1: loss 0.5" in done.stderr
