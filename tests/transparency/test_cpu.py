"""graphdoctor is transparent to the script it runs: what a script sets up of its own process
(warnings filters, logging, hooks, signal handlers, sys.monitoring tool ids) and the tools it
runs under (-W error, coverage, pdb) are as without graphdoctor. Each test runs one script of
tests/transparency/scripts plainly and under ``graphdoctor run`` and compares what the script
saw. These need no GPU: on a CPU build the recorder still installs its warnings, logging,
thread, signal and torch.compile hooks (tests/gpu/test_transparency_gpu.py does the rest)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.transparency.runs import plain_and_recorded

pytest.importorskip("torch")

pytestmark = pytest.mark.slow  # the second test command (README: Tests)


def test_the_scripts_own_warnings_logging_hooks_and_handlers_stay_as_it_set_them(
        tmp_path: Path) -> None:
    pair = plain_and_recorded(tmp_path, "own_state.py")
    assert pair.plain.returncode == 0 == pair.recorded.returncode, pair.recorded.stderr[-3000:]
    states = pair.plain.lines("STATE ")
    assert len(states) == 2 and pair.recorded.lines("STATE ") == states
    for seen in ("my thread hook saw ValueError", "my handler got SIGUSR2"):
        assert seen in pair.plain.stdout and seen in pair.recorded.stdout
    trace = json.loads(pair.report.read_text())["trace"]
    assert [e["where"] for e in trace["exceptions"]] == ["thread"]  # under the script's hook
    assert "graph_break" in [e["kind"] for e in trace["compile_events"]]  # torch's DEBUG log


def test_a_run_with_warnings_as_errors_behaves_as_without_graphdoctor(tmp_path: Path) -> None:
    pair = plain_and_recorded(tmp_path, "warnings_error.py",
                              python=("-W", "error::UserWarning:__main__"),
                              env={"PYTHONWARNINGS": "ignore::DeprecationWarning"})
    assert pair.plain.returncode == 0 == pair.recorded.returncode, pair.recorded.stderr[-3000:]
    assert "raised: under -W" in pair.plain.stdout
    assert "'ignore::DeprecationWarning', 'error::UserWarning:__main__'" in pair.plain.stdout
    assert pair.recorded.stdout == pair.plain.stdout


def test_sigusr2_does_to_the_script_what_it_does_without_graphdoctor(tmp_path: Path) -> None:
    pair = plain_and_recorded(tmp_path, "signal_default.py")
    assert pair.plain.returncode == -signal.SIGUSR2
    assert pair.recorded.returncode == 128 + signal.SIGUSR2
    assert "still running" not in pair.plain.stdout + pair.recorded.stdout


def test_pdb_at_a_breakpoint_works_as_without_graphdoctor(tmp_path: Path) -> None:
    pair = plain_and_recorded(tmp_path, "debugged.py", stdin="p value\nn\np value + 1\nc\n",
                              env={"PYTHONBREAKPOINT": "pdb.set_trace"})
    assert pair.plain.returncode == 0 == pair.recorded.returncode, pair.recorded.stderr[-3000:]
    assert "(Pdb) 3.0" in pair.plain.stdout and "doubled 4.0" in pair.plain.stdout
    assert pair.recorded.stdout == pair.plain.stdout


def test_coverage_measures_the_script_as_without_graphdoctor(tmp_path: Path) -> None:
    pytest.importorskip("coverage")
    core = {"COVERAGE_CORE": "sysmon"} if sys.version_info >= (3, 12) else {}
    pair = plain_and_recorded(tmp_path, "coverage", "run", str(_script("covered.py")),
                              module=True, env=core)
    assert pair.plain.returncode == 0 == pair.recorded.returncode, pair.recorded.stderr[-3000:]
    plain, recorded = (_measured(tmp_path / run) for run in ("plain", "recorded"))
    assert plain["summary"]["percent_covered"] < 100  # some lines never ran
    assert recorded == plain


def _script(name: str) -> Path:
    return Path(__file__).with_name("scripts") / name


def _measured(folder: Path) -> dict[str, object]:
    """coverage's figures for the script, from the data file its run left in ``folder``."""
    out = folder / "coverage.json"
    subprocess.run([sys.executable, "-m", "coverage", "json", "-q", "-o", str(out)],
                   cwd=folder, check=True, timeout=60)
    files = json.loads(out.read_text())["files"]
    name = next(path for path in files if path.endswith("covered.py"))
    figures: dict[str, object] = files[name]
    return {key: figures[key] for key in ("executed_lines", "missing_lines", "summary")}
