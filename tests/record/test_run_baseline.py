"""``graphdoctor run --baseline`` on the CPU: the script runs as written, then again with
CUDA graphs off, and one report holds the first run with an account of the second."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from graphdoctor.report.io import load
from graphdoctor.trace.names import GRAPHS_ENV

pytestmark = pytest.mark.slow

SCRIPT = f"""
    import os
    import torch

    print("GRAPHS", os.environ.get("{GRAPHS_ENV}", "as written"))
    step = torch.compile(lambda x: x * 2, mode="reduce-overhead", backend="eager")
    graphed = torch.cuda.make_graphed_callables(torch.nn.Linear(2, 2), (torch.ones(2),)) \\
        if os.environ.get("{GRAPHS_ENV}") else None
    for _ in range(4):
        step(torch.ones(2))
"""


def run(tmp_path: Path, *options: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "s.py").write_text(textwrap.dedent(SCRIPT))
    return subprocess.run([sys.executable, "-m", "graphdoctor", "run", "-o", "r.json",
                           *options, "s.py"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)


def test_the_script_runs_again_with_graphs_off_and_the_report_says_so(tmp_path: Path) -> None:
    done = run(tmp_path, "--baseline")
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == ["GRAPHS as written", "GRAPHS off"]
    assert "graphdoctor: --baseline: running s.py again with CUDA graphs off" in done.stderr
    report = load(tmp_path / "r.json")
    assert GRAPHS_ENV not in dict(report.trace.meta.env)  # the report is the first run's
    assert report.baseline is not None and report.baseline.complete
    assert report.baseline.eager_calls == 3  # the first of 4 calls compiled: a warm-up
    assert report.baseline.switched_off[0].startswith("make_graphed_callables at ")
    assert "Baseline run (graphdoctor run --baseline)" in subprocess.run(
        [sys.executable, "-m", "graphdoctor", "report", str(tmp_path / "r.json")],
        capture_output=True, text=True, timeout=120).stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json", "s.py"]  # no spool left


def test_keep_spool_keeps_both_runs(tmp_path: Path) -> None:
    done = run(tmp_path, "--baseline", "-q", "--keep-spool", "kept.spool.jsonl")
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "kept.spool.jsonl").exists()
    assert (tmp_path / "kept.baseline.spool.jsonl").exists()


def test_a_run_without_baseline_runs_once(tmp_path: Path) -> None:
    done = run(tmp_path, "-q")
    assert done.stdout.splitlines() == ["GRAPHS as written"]
    assert load(tmp_path / "r.json").baseline is None


def test_baseline_takes_one_process(tmp_path: Path) -> None:
    done = run(tmp_path, "--baseline", "--nproc-per-node", "2")
    assert done.returncode == 2 and "--baseline runs one process" in done.stderr
