"""The TUI opens reports where torch is not installed, and loads Textual only to run."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT

BLOCK_TORCH = "import sys; sys.modules['torch'] = None\n"


def run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", BLOCK_TORCH + code], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


def test_the_tui_and_view_command_import_without_torch() -> None:
    done = run("import graphdoctor.tui.app, graphdoctor.cli.view_cmd, graphdoctor.demo\n"
               "from graphdoctor.demo import load_demo\n"
               "from graphdoctor.tui.report_view import ReportView\n"
               "ReportView(load_demo()).lanes\n"
               "print('ok')")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_importing_the_package_does_not_load_textual() -> None:
    done = run("import graphdoctor.tui\nprint('textual' in sys.modules)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
