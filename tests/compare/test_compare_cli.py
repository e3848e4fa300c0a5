"""``graphdoctor compare`` end to end on the CPU: the variants run alternately as normal
recordings, the table or JSON comes out, --keep-reports keeps each run's report, and
--fail-on gates on every run."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from graphdoctor.report.gates import GATE_EXIT
from graphdoctor.report.io import load

pytestmark = pytest.mark.slow

SCRIPT = """
    import os
    import sys
    import torch

    step = torch.compile(lambda x: x * 2, mode="reduce-overhead", backend="eager")
    for _ in range(int(sys.argv[1])):
        step(torch.ones(2))
    print("RAN", os.environ.get("GRAPHDOCTOR_GRAPHS", "-"), os.environ.get("X", "-"),
          sys.argv[1:], flush=True)
"""


def compare(tmp_path: Path, *options: str, script: str = SCRIPT,
            args: tuple[str, ...] = ("4",)) -> subprocess.CompletedProcess[str]:
    (tmp_path / "s.py").write_text(textwrap.dedent(script))
    return subprocess.run([sys.executable, "-m", "graphdoctor", "compare", *options, "s.py",
                           *args], cwd=tmp_path, capture_output=True, text=True, timeout=600)


def test_variants_run_alternately_and_the_json_holds_every_row(tmp_path: Path) -> None:
    (tmp_path / "kept").mkdir()
    done = compare(tmp_path, "-f", "json", "-q", "--variant", "x:X=1 --more",
                   "--keep-reports", "kept")
    assert done.returncode == 0, done.stderr[-3000:]
    # with JSON on stdout, the script's own prints go to stderr: stdout is JSON alone
    ran = [line for line in done.stderr.splitlines() if line.startswith("RAN")]
    assert ran == ["RAN - - ['4']", "RAN off - ['4']", "RAN - 1 ['4', '--more']",
                   "RAN off - ['4']", "RAN - 1 ['4', '--more']", "RAN - - ['4']"]
    data = json.loads(done.stdout)
    assert [(r["variant"], r["repeat"]) for r in data["runs"]] == [
        ("as-written", 0), ("graphs-off", 0), ("x", 0), ("graphs-off", 1), ("x", 1),
        ("as-written", 1)]
    off = [r for r in data["rows"] if r["variant"] == "graphs-off"]
    assert [(r["calls"], r["samples"], r["verdict"]["kind"]) for r in off] == [
        ("eager", 6, "graphs-off")]  # 3 eager calls a run (the first compiled), 2 runs
    assert off[0]["host_us"]["p50"] > 0 and off[0]["gpu_us"] is None  # no GPU here
    for run in data["runs"]:
        assert load(tmp_path / run["report"]).trace.status.complete
    assert sorted(p.name for p in (tmp_path / "kept").iterdir()) == [
        "as-written-1.json", "as-written-2.json", "graphs-off-1.json", "graphs-off-2.json",
        "x-1.json", "x-2.json"]


def test_the_table_and_the_progress_lines(tmp_path: Path) -> None:
    done = compare(tmp_path, "--repeats", "1", "--width", "160")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "graphdoctor: compare run 2/2: graphs-off (repeat 1)" in done.stderr
    assert "graphdoctor compare: s.py 4" in done.stdout
    assert "graphs-off   eager" in done.stdout and "Runs, in the order they ran" in done.stdout


def test_fail_on_trips_on_a_run_and_says_which(tmp_path: Path) -> None:
    done = compare(tmp_path, "--repeats", "1", "--timeout", "3", "--fail-on", "incomplete",
                   "-q", script="import time\ntime.sleep(60)\n", args=())
    assert done.returncode == GATE_EXIT, done.stderr[-3000:]
    assert "graphdoctor: --fail-on incomplete: as-written run 1: the run timed out" in \
        done.stderr


@pytest.mark.parametrize(("options", "message"), [
    (("--variant", "nocolon"), "write NAME:SPEC"),
    (("--variant", "graphs-off:A=1"), "names must differ"),
    (("--keep-reports", "missing"), "no such folder for the reports"),
    (("--fail-on", "nonsense"), "unknown --fail-on condition"),
])
def test_usage_errors_exit_2_before_any_run(tmp_path: Path, options: tuple[str, ...],
                                            message: str) -> None:
    done = compare(tmp_path, *options)
    assert done.returncode == 2 and message in done.stderr and "RAN" not in done.stdout
