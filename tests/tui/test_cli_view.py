"""``graphdoctor view``: the interactive path, and what it does without a terminal."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from click.testing import CliRunner

from graphdoctor import tui
from graphdoctor.cli import main
from graphdoctor.report.document import Report
from graphdoctor.report.io import save
from graphdoctor.tui import run_app
from tests.reports import report_for


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Report, str]]:
    """Pretend to be at a terminal and record what the TUI would have been opened on."""
    calls: list[tuple[Report, str]] = []
    monkeypatch.setattr(tui, "can_run_interactively", lambda: True)
    monkeypatch.setattr(tui, "run_app", lambda report, name="": calls.append((report, name)))
    return calls


def test_a_report_file_opens_in_the_tui(tmp_path: Path, opened: list[tuple[Report, str]]) -> None:
    path = save(report_for("item_in_capture"), tmp_path / "run.json.gz")
    result = CliRunner().invoke(main, ["view", str(path)])
    assert result.exit_code == 0, result.output
    [(report, name)] = opened
    assert report.trace.graphs[0].status == "failed" and name == str(path)


def test_the_demo_opens_without_a_gpu(opened: list[tuple[Report, str]]) -> None:
    result = CliRunner().invoke(main, ["view", "--demo"])
    assert result.exit_code == 0, result.output
    [(report, name)] = opened
    assert name == "demo: item_in_capture"
    assert report.trace.meta.devices[0].name.startswith("NVIDIA")  # recorded on a real GPU
    result = CliRunner().invoke(main, ["view", "--demo", "launch_bound"])
    assert opened[-1][1] == "demo: launch_bound"


def test_without_a_terminal_it_prints_the_summary_instead() -> None:
    result = CliRunner().invoke(main, ["view", "--demo"])  # CliRunner's streams are no TTY
    assert result.exit_code == 0
    assert "not a terminal" in result.stderr
    assert "item_in_capture.py" in result.stdout and "\x1b[" not in result.stdout


@pytest.mark.parametrize(("args", "message"), [
    (["view"], "give a REPORT to view"),
    (["view", "--demo", "nope"], "no demo named 'nope'"),
    (["view", "x.json", "--demo"], "not both"),
    (["view", "/no/such/report.json"], "no such file"),
])
def test_mistakes_are_one_line_and_exit_2(args: list[str], message: str) -> None:
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    assert message in result.stderr


def test_interactivity_needs_both_streams_to_be_terminals(monkeypatch: pytest.MonkeyPatch) -> None:
    class Stream:
        def __init__(self, tty: bool) -> None:
            self.tty = tty

        def isatty(self) -> bool:
            return self.tty

    monkeypatch.setenv("TERM", "xterm-256color")
    for stdin, stdout, expected in [(True, True, True), (True, False, False),
                                    (False, True, False)]:
        monkeypatch.setattr("sys.stdin", Stream(stdin))
        monkeypatch.setattr("sys.stdout", Stream(stdout))
        assert tui.can_run_interactively() is expected
    monkeypatch.setenv("TERM", "dumb")
    assert tui.can_run_interactively() is False


def test_a_crash_of_the_viewer_is_one_line_and_exit_1(monkeypatch: pytest.MonkeyPatch) -> None:
    from graphdoctor.tui.app import GraphDoctorApp

    def crash(self: GraphDoctorApp) -> None:
        raise RuntimeError("boom\nmore about it")

    monkeypatch.setattr(tui, "can_run_interactively", lambda: True)
    monkeypatch.setattr(tui, "run_app", functools.partial(run_app, headless=True))
    monkeypatch.setattr(GraphDoctorApp, "on_mount", crash)
    result = CliRunner().invoke(main, ["view", "--demo"])
    assert result.exit_code == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("graphdoctor: error: the viewer crashed (RuntimeError: boom);")


def test_the_app_returns_none_when_the_user_quits(monkeypatch: pytest.MonkeyPatch) -> None:
    from graphdoctor.tui.app import GraphDoctorApp

    monkeypatch.setattr(GraphDoctorApp, "on_mount", lambda self: self.exit())
    assert run_app(report_for("item_in_capture"), headless=True) is None
