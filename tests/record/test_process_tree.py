"""The whole process tree ends with the run: a helper the script started in a session of its
own (out of reach of every process group graphdoctor signals) ends when the script exits by
itself, when graphdoctor is sent SIGTERM, on ``--timeout`` and when graphdoctor is killed
outright; DataLoader workers end with the run as they always have. graphdoctor says in one
line what it ended, the report notes it, and a pipe on graphdoctor's stdout closes once
graphdoctor is done (``graphdoctor run x.py | grep ...`` never hangs)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from graphdoctor.launch.process_tree import adopting_orphans, descendants, kill_below, running
from graphdoctor.report.io import load
from graphdoctor.trace.endings import INTERRUPTED, TIMED_OUT
from tests.record.processes import HAS_PROC, assert_gone, state, wait_for, with_default_signals

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not HAS_PROC, reason="reads processes from /proc")]

# The script starts a helper in a session of its own, with graphdoctor's stdout, and one in
# its own process group; it says the pids, then ends or works on ({then}).
LEAVES_HELPERS = """
import os, subprocess, sys, time
alone = subprocess.Popen(["sleep", "600"], start_new_session=True)
grouped = subprocess.Popen(["sleep", "601"])
with open("pids.tmp", "w") as out:
    out.write(f"{os.getpid()} {alone.pid} {grouped.pid}")
os.replace("pids.tmp", "pids")
{then}
"""
WORKS_ON = "for _ in range(1200):\n    time.sleep(0.1)"
SETTLES_WITHIN_S = 30  # the leftovers' grace periods, on a loaded machine


def start(tmp_path: Path, source: str, *options: str) -> subprocess.Popen[str]:
    """graphdoctor with its stdout and stderr on pipes, as in ``graphdoctor run x | grep``."""
    (tmp_path / "script.py").write_text(textwrap.dedent(source))
    return subprocess.Popen([sys.executable, "-m", "graphdoctor", "run", "-o", "report.json",
                             *options, "script.py"], cwd=tmp_path, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=with_default_signals)


def pids_of(path: Path, parent: subprocess.Popen[str]) -> list[int]:
    wait_for(path.exists, 90, "the script did not start")
    return [int(pid) for pid in path.read_text().split()]


def finish(parent: subprocess.Popen[str], pids: list[int]) -> str:
    """graphdoctor's stderr, once every holder of its pipes has closed them; the helpers
    are ended here whatever the test found, so that none outlives it."""
    try:
        _, stderr = parent.communicate(timeout=120)
        assert_gone(pids, within=SETTLES_WITHIN_S)
    finally:
        for pid in pids:
            if state(pid):
                os.kill(pid, signal.SIGKILL)
    return stderr


def leftover_line(alone: int, grouped: int) -> str:
    return (f"graphdoctor: ended 2 processes the script left running (pid {alone}: sleep, "
            f"pid {grouped}: sleep)")


@pytest.mark.slow
def test_what_the_script_leaves_running_ends_with_the_run(tmp_path: Path) -> None:
    parent = start(tmp_path, LEAVES_HELPERS.replace("{then}", "sys.exit(3)"))
    pids = pids_of(tmp_path / "pids", parent)
    stderr = finish(parent, pids)
    assert parent.returncode == 3, stderr
    assert leftover_line(*pids[1:]) in stderr.splitlines()
    report = load(tmp_path / "report.json")
    left = list(report.trace.tables["left_running"])
    assert sorted((p.pid, p.name, p.survived) for p in left) == [
        (pids[1], "sleep", 0), (pids[2], "sleep", 0)]
    [finding] = [f for f in report.diagnosis.findings if f.name == "left-running"]
    assert finding.title.startswith("the script left 2 processes running when it ended")
    assert [e.kind for e in finding.evidence] == ["left_running"] * 2


@pytest.mark.slow
def test_sigterm_to_graphdoctor_ends_a_helper_in_a_session_of_its_own(tmp_path: Path) -> None:
    parent = start(tmp_path, LEAVES_HELPERS.replace("{then}", WORKS_ON))
    pids = pids_of(tmp_path / "pids", parent)
    os.kill(parent.pid, signal.SIGTERM)
    stderr = finish(parent, pids)
    assert parent.returncode == 128 + signal.SIGTERM, stderr
    assert load(tmp_path / "report.json").trace.status.reason == INTERRUPTED
    assert f"pid {pids[1]}: sleep" in stderr, "the helper out of the script's group"


@pytest.mark.slow
def test_a_time_out_ends_a_helper_in_a_session_of_its_own(tmp_path: Path) -> None:
    parent = start(tmp_path, LEAVES_HELPERS.replace("{then}", WORKS_ON), "--timeout", "8")
    pids = pids_of(tmp_path / "pids", parent)
    stderr = finish(parent, pids)
    assert parent.returncode == 124, stderr
    assert load(tmp_path / "report.json").trace.status.reason == TIMED_OUT


@pytest.mark.slow
def test_kill_9_of_graphdoctor_ends_a_helper_in_a_session_of_its_own(tmp_path: Path) -> None:
    """graphdoctor cannot end anything then: the script ends all below it."""
    parent = start(tmp_path, LEAVES_HELPERS.replace("{then}", WORKS_ON))
    pids = pids_of(tmp_path / "pids", parent)
    os.kill(parent.pid, signal.SIGKILL)
    stderr = finish(parent, pids)
    assert parent.returncode == -signal.SIGKILL
    assert "its recording is kept at" in stderr


DATALOADER = """
import os, time
import torch
from torch.utils.data import DataLoader, Dataset

class Slow(Dataset):
    def __len__(self):
        return 100_000
    def __getitem__(self, index):
        info = torch.utils.data.get_worker_info()
        with open(f"worker{info.id}.tmp", "w") as out:
            out.write(str(os.getpid()))
        os.replace(f"worker{info.id}.tmp", f"worker{info.id}")
        time.sleep(0.2)
        return index

for item in DataLoader(Slow(), num_workers=2):
    pass
"""


@pytest.mark.slow
def test_dataloader_workers_end_with_the_run(tmp_path: Path) -> None:
    parent = start(tmp_path, DATALOADER)
    workers = [pids_of(tmp_path / f"worker{n}", parent)[0] for n in (0, 1)]
    os.kill(parent.pid, signal.SIGTERM)
    stderr = finish(parent, workers)
    assert parent.returncode == 128 + signal.SIGTERM, stderr


SPAWNS = """
import subprocess, sys, time
subprocess.Popen(["sleep", "600"], start_new_session=True)
time.sleep(600)
"""


def test_kill_below_ends_a_tree_across_sessions() -> None:
    top = subprocess.Popen([sys.executable, "-c", SPAWNS])
    try:
        wait_for(lambda: len(running(descendants(top.pid))) == 1, 30, "no helper started")
        [helper] = descendants(top.pid)
        assert helper.name == "sleep" and helper.parent == top.pid
        assert kill_below(top.pid) == {helper.pid}
        assert_gone([helper.pid])
        assert top.poll() is None, "the process the tree hangs from is not below it"
    finally:
        top.kill()
        top.wait()


def test_orphans_come_to_a_subreaper() -> None:
    """The shell ends at once, leaving its background sleep to whoever adopts it."""
    with adopting_orphans() as before:
        assert os.getpid() not in before
        # the sleep's output elsewhere: on the pipe, it would hold the shell's output open
        shell = subprocess.run(["sh", "-c", "sleep 600 >/dev/null 2>&1 & echo $!"],
                               capture_output=True, text=True, check=True, timeout=30)
        orphan = int(shell.stdout)
        try:
            [adopted] = [p for p in descendants(os.getpid()) if p.pid == orphan]
            assert adopted.parent == os.getpid() and not adopted.zombie
        finally:
            os.kill(orphan, signal.SIGKILL)
            os.waitpid(orphan, 0)
