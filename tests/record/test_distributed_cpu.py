"""Distributed runs on the CPU (gloo): one report with every rank, divergence and hangs
named, and every rank ended when the run times out."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from graphdoctor.report.io import load
from tests.record.processes import HAS_PROC, assert_gone

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("contained_tmp")]

SCRIPT = """import os; open(f"pid{os.environ['RANK']}", "w").write(str(os.getpid()))
import sys, torch, torch.distributed as dist
dist.init_process_group("gloo")
rank = dist.get_rank()
t = torch.ones(4) * rank
dist.all_reduce(t)
if rank == 1 and "--extra" in sys.argv:
    dist.all_reduce(t)  # an extra collective the other rank never joins
if rank == 1 and "--raise" in sys.argv:
    raise RuntimeError("rank 1 gives up")
dist.barrier()
dist.destroy_process_group()
"""


def run_ranks(tmp_path: Path, *script_args: str, timeout: str = "60") -> tuple[int, Path]:
    (tmp_path / "job.py").write_text(textwrap.dedent(SCRIPT))
    report = tmp_path / "job.json"
    done = subprocess.run([sys.executable, "-m", "graphdoctor", "run", "-q", "--nproc-per-node",
                           "2", "--timeout", timeout, "-o", str(report), "job.py", *script_args],
                          cwd=tmp_path, capture_output=True, text=True, timeout=180)
    return done.returncode, report


def names(report_path: Path) -> set[str]:
    return {f.name for f in load(report_path).diagnosis.findings}


def test_every_rank_is_in_one_report(tmp_path: Path) -> None:
    started = time.time_ns()
    code, path = run_ranks(tmp_path)
    report = load(path)
    assert code == 0 and report.ranks == [0, 1]
    clocks = [report.trace_of(rank).meta.clock_unix_ns for rank in (0, 1)]
    assert all(started < clock < time.time_ns() for clock in clocks)  # each rank's wall clock
    env = dict(report.trace_of(1).meta.env)  # at its start, and the job the launcher named
    assert env["TORCHELASTIC_RUN_ID"] and env["MASTER_PORT"] and env["GROUP_RANK"] == "0"
    for rank in (0, 1):
        trace = report.trace_of(rank)
        assert trace.meta.rank == rank and trace.meta.backend == "gloo"
        assert [(c.op, c.seq) for c in trace.tables["collectives"]] == [("all_reduce", 0),
                                                                        ("barrier", 1)]
        assert [e.kind for e in trace.teardown] == ["begin", "end"] and trace.status.complete
    assert not names(path) & {"ranks-diverged", "distributed-hang", "teardown-hang"}
    assert list(tmp_path.glob("torchelastic_*")), "the launcher's log folder is the test's"


def test_an_extra_collective_is_named_and_the_hang_ended(tmp_path: Path) -> None:
    code, path = run_ranks(tmp_path, "--extra", timeout="15")
    report = load(path)
    assert code == 124
    diverged = [f for f in report.diagnosis.findings if f.name == "ranks-diverged"]
    assert diverged and "rank 0 issued barrier" in diverged[0].title
    assert "rank 1 issued all_reduce at job.py:8" in diverged[0].title
    hang = [f for f in report.diagnosis.findings if f.name == "distributed-hang"]
    assert hang and "rank 0 waits in barrier" in hang[0].title
    assert all(report.trace_of(r).status.stacks_at_end for r in (0, 1))
    assert {e.rank for e in diverged[0].evidence} == {0, 1}
    if HAS_PROC:  # no rank outlived the time-out
        assert_gone(int((tmp_path / f"pid{rank}").read_text()) for rank in (0, 1))


def test_a_rank_that_fails_is_named_where_the_ranks_part(tmp_path: Path) -> None:
    code, path = run_ranks(tmp_path, "--raise", timeout="60")
    report = load(path)
    assert code != 0
    assert report.trace_of(1).exceptions[-1].root.message == "rank 1 gives up"
    assert report.trace_of(1).status.exit_code == 1
    diverged = [f for f in report.diagnosis.findings if f.name == "ranks-diverged"]
    assert diverged and diverged[0].title.endswith("rank 0 issued barrier at job.py:11; "
                                                   "rank 1 issued none")


def test_inside_a_job_each_rank_writes_its_own_report(tmp_path: Path) -> None:
    (tmp_path / "job.py").write_text(textwrap.dedent(SCRIPT))
    env = {**os.environ, "NCCL_NVLS_ENABLE": "0"}
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                           "--nproc-per-node=2", "-m", "graphdoctor", "run", "-q", "-o",
                           "job.json", "job.py"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=180, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    for rank in (0, 1):
        trace = load(tmp_path / f"job.rank{rank}.json").trace
        assert trace.meta.rank == rank and trace.meta.world_size == 2
    assert list(tmp_path.glob("torchelastic_*")), "the launcher's log folder is the test's"
