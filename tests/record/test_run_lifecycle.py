"""What happens to the script when ``graphdoctor run`` itself is signalled: the terminal
closes (SIGHUP), Ctrl-C, ``kill``, Ctrl-\\ (SIGQUIT), ``kill -9``, and Ctrl-Z then ``fg``.

No process is left behind: the script, what it started, and every rank of a distributed run
end within 2 s of graphdoctor. Wherever graphdoctor lives on, it writes the report, marked
incomplete with the signal it was sent.
"""

from __future__ import annotations

import fcntl
import os
import resource
import signal
import subprocess
import sys
import termios
import textwrap
import time
from collections.abc import Iterable
from pathlib import Path

import pytest

from graphdoctor.report.io import load
from graphdoctor.trace.endings import INTERRUPTED
from graphdoctor.trace.spool import read_records
from tests.record.processes import HAS_PROC, assert_gone, state, wait_for

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not HAS_PROC, reason="reads process states from /proc")]

# The script starts a helper process of its own, says both pids, then works until stopped.
WORKER = """
import os, subprocess, sys, time, warnings
helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
warnings.warn("the last record before the pids")
with open("pids.tmp", "w") as out:
    out.write(f"{os.getpid()} {helper.pid}")
os.replace("pids.tmp", "pids")
for _ in range(1200):
    time.sleep(0.1)
"""


def signal_id(signum: int) -> str:
    return signal.Signals(signum).name


def as_a_job() -> None:
    """In graphdoctor's process: a process group of its own within this session, as a shell
    starts a job, so that SIGTSTP stops it the way Ctrl-Z does; and no core file from
    SIGQUIT."""
    os.setpgid(0, 0)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def start(tmp_path: Path, source: str, *options: str) -> subprocess.Popen[str]:
    (tmp_path / "script.py").write_text(textwrap.dedent(source))
    return subprocess.Popen([sys.executable, "-m", "graphdoctor", "run", "-o", "report.json",
                             *options, "script.py"], cwd=tmp_path, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=as_a_job)


def pids_of(path: Path, parent: subprocess.Popen[str]) -> list[int]:
    def written() -> bool:
        assert parent.poll() is None, parent.communicate()
        return path.exists()

    wait_for(written, 90, "the script did not start")
    return [int(pid) for pid in path.read_text().split()]


def end_leftovers(pids: Iterable[int]) -> None:
    for pid in pids:
        if state(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGINT, signal.SIGTERM,
                                    signal.SIGQUIT], ids=signal_id)
def test_a_signal_to_graphdoctor_ends_the_script_and_writes_the_report(
        tmp_path: Path, signum: int) -> None:
    parent = start(tmp_path, WORKER)
    pids = pids_of(tmp_path / "pids", parent)
    try:
        os.kill(parent.pid, signum)
        _, stderr = parent.communicate(timeout=60)
        assert_gone(pids)
    finally:
        end_leftovers(pids)
    assert parent.returncode == 128 + signum, stderr
    status = load(tmp_path / "report.json").trace.status
    assert not status.complete and status.reason == INTERRUPTED and status.signal == signum
    assert signal.Signals(signum).name in status.message


def test_closing_the_terminal_ends_the_script_and_writes_the_report(tmp_path: Path) -> None:
    """graphdoctor on a terminal of its own, which then closes: the kernel sends SIGHUP, and
    every line graphdoctor prints after that fails to reach anyone."""
    (tmp_path / "script.py").write_text(textwrap.dedent(WORKER))
    terminal, attached = os.openpty()
    parent = subprocess.Popen([sys.executable, "-m", "graphdoctor", "run", "-o", "report.json",
                               "script.py"], cwd=tmp_path, stdin=attached, stdout=attached,
                              stderr=attached, start_new_session=True, preexec_fn=take_terminal)
    os.close(attached)
    pids = pids_of(tmp_path / "pids", parent)
    try:
        os.close(terminal)
        parent.wait(timeout=60)
        assert_gone(pids)
    finally:
        end_leftovers(pids)
    assert parent.returncode == 128 + signal.SIGHUP
    status = load(tmp_path / "report.json").trace.status
    assert status.reason == INTERRUPTED and status.signal == signal.SIGHUP


def take_terminal() -> None:
    """Make the terminal on stdin this new session's controlling terminal."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def test_kill_9_of_graphdoctor_ends_the_script_which_flushes_its_recording(
        tmp_path: Path) -> None:
    parent = start(tmp_path, "import torch  # recording starts with it\n" + WORKER)
    pids = pids_of(tmp_path / "pids", parent)
    try:
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=10)
        assert_gone(pids)
    finally:
        end_leftovers(pids)
    [spool] = tmp_path.glob("report.json*.spool")
    tags = [record[0] for record in read_records(spool)]
    assert "warn" in tags, "records buffered when graphdoctor died were written out"
    assert tags[-1] == "note" and not (tmp_path / "report.json").exists()


def test_ctrl_z_stops_the_script_with_graphdoctor_and_fg_resumes_both(tmp_path: Path) -> None:
    parent = start(tmp_path, """
        import os, time
        with open("pids", "w") as out:
            out.write(str(os.getpid()))
        for tick in range(40):
            with open("ticks", "w") as out:
                out.write(str(tick))
            time.sleep(0.1)
    """)
    [child] = pids_of(tmp_path / "pids", parent)
    try:
        os.kill(parent.pid, signal.SIGTSTP)
        wait_for(lambda: state(parent.pid) == state(child) == "T", 5, "not both stopped")
        ticks = (tmp_path / "ticks").read_text()
        time.sleep(0.5)
        assert (tmp_path / "ticks").read_text() == ticks, "the script went on while stopped"
        os.kill(parent.pid, signal.SIGCONT)  # what the shell's fg sends
        wait_for(lambda: "T" not in (state(parent.pid), state(child)), 5, "not both resumed")
        _, stderr = parent.communicate(timeout=60)
    finally:
        end_leftovers([parent.pid, child])
    assert parent.returncode == 0, stderr
    assert load(tmp_path / "report.json").trace.status.complete


DISTRIBUTED_WORKER = """
import os, time
with open(f"pids.tmp{os.environ['RANK']}", "w") as out:
    out.write(f"{os.getpid()} {os.getppid()}")
os.replace(f"pids.tmp{os.environ['RANK']}", f"pids{os.environ['RANK']}")
for _ in range(1200):
    time.sleep(0.1)
"""


def start_ranks(tmp_path: Path) -> tuple[subprocess.Popen[str], list[int]]:
    """Two ranks that work until stopped, and their pids with the launcher's."""
    parent = start(tmp_path, DISTRIBUTED_WORKER, "--nproc-per-node", "2")
    ranks = [pids_of(tmp_path / f"pids{rank}", parent) for rank in (0, 1)]
    return parent, sorted({pid for pair in ranks for pid in pair})


@pytest.mark.usefixtures("contained_tmp")
@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGKILL], ids=signal_id)
def test_no_rank_outlives_graphdoctor(tmp_path: Path, signum: int) -> None:
    parent, pids = start_ranks(tmp_path)
    try:
        os.kill(parent.pid, signum)
        parent.communicate(timeout=60)
        assert_gone(pids)
    finally:
        end_leftovers(pids)
    if signum == signal.SIGKILL:
        return
    report = load(tmp_path / "report.json")
    for rank in (0, 1):
        status = report.trace_of(rank).status
        assert not status.complete and status.reason == INTERRUPTED and status.signal == signum


def test_kill_9_of_graphdoctor_stopped_by_ctrl_z_ends_the_stopped_script(
        tmp_path: Path) -> None:
    """A stopped process runs no thread: the kernel must wake it to let it see it is alone."""
    parent = start(tmp_path, WORKER)
    pids = pids_of(tmp_path / "pids", parent)
    try:
        os.kill(parent.pid, signal.SIGTSTP)
        wait_for(lambda: state(parent.pid) == state(pids[0]) == "T", 5, "not both stopped")
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=10)
        assert_gone(pids)
    finally:
        end_leftovers(pids)


@pytest.mark.usefixtures("contained_tmp")
def test_ctrl_z_stops_every_rank_and_fg_resumes_them(tmp_path: Path) -> None:
    parent, pids = start_ranks(tmp_path)
    try:
        os.kill(parent.pid, signal.SIGTSTP)
        wait_for(lambda: {state(pid) for pid in [parent.pid, *pids]} == {"T"}, 5,
                 "not all stopped")
        os.kill(parent.pid, signal.SIGCONT)
        wait_for(lambda: "T" not in {state(pid) for pid in [parent.pid, *pids]}, 5,
                 "not all resumed")
        os.kill(parent.pid, signal.SIGTERM)
        parent.communicate(timeout=60)
        assert_gone(pids)
    finally:
        end_leftovers(pids)
