"""What happens to the script when ``graphdoctor run`` itself is signalled: the terminal
closes (SIGHUP), Ctrl-C, ``kill``, Ctrl-\\ (SIGQUIT), ``kill -9``, and Ctrl-Z then ``fg``.

No process is left behind: the script, what it started, and every rank of a distributed run
end within 2 s of graphdoctor. Wherever graphdoctor lives on, it writes the report, marked
incomplete with the signal it was sent; a script that goes on regardless is killed, and the
report says so. No scratch file is left behind without a word.
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

from graphdoctor.files.run_files import RunFiles
from graphdoctor.launch.leftovers import Leftovers
from graphdoctor.launch.supervisor import ESCALATE_AFTER_S, RunEnd, RunRequest, close_spools
from graphdoctor.report.io import load
from graphdoctor.trace.endings import EXITED, INTERRUPTED, SIGNALLED
from graphdoctor.trace.spool.file import read_records
from tests.record.processes import (
    HAS_PROC,
    assert_gone,
    state,
    wait_for,
    with_default_signals,
)

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
    starts a job, so that SIGTSTP stops it the way Ctrl-Z does; no core file from SIGQUIT;
    and the signals the tests send acted on, however the test run was started."""
    os.setpgid(0, 0)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    with_default_signals()


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
    with_default_signals()


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
    assert parent.stderr is not None
    said = parent.stderr.read()  # the script's stderr too: it is gone, so this ends
    assert f"its recording is kept at {spool.resolve()}\n" in said, said
    left = sorted(p.name for p in tmp_path.iterdir() if p.suffix in (".tail", ".fault"))
    assert not left, "the tail is in the spool, and faulthandler wrote no stacks"


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


def ignoring(signum: int) -> str:
    """A script that ignores ``signum``, says its pid, then works for two minutes."""
    return f"""
import os, signal, time
signal.signal(signal.{signal.Signals(signum).name}, signal.SIG_IGN)
with open("pids.tmp", "w") as out:
    out.write(str(os.getpid()))
os.replace("pids.tmp", "pids")
for _ in range(1200):
    time.sleep(0.1)
"""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=signal_id)
def test_a_script_that_goes_on_after_the_signal_is_killed_and_the_report_says_so(
        tmp_path: Path, signum: int) -> None:
    parent = start(tmp_path, ignoring(signum))
    pids = pids_of(tmp_path / "pids", parent)
    try:
        sent = time.monotonic()
        os.kill(parent.pid, signum)
        _, stderr = parent.communicate(timeout=120)
        waited = time.monotonic() - sent
        assert_gone(pids)
    finally:
        end_leftovers(pids)
    name = signal.Signals(signum).name
    assert parent.returncode == 128 + signal.SIGKILL, stderr
    assert waited >= ESCALATE_AFTER_S, "the script was given its time to end"
    assert f"went on {ESCALATE_AFTER_S:g} s after {name}; killing it (SIGKILL)" in stderr
    trace = load(tmp_path / "report.json").trace
    status = trace.status
    assert (status.reason, status.signal, status.exit_code) == (SIGNALLED, signal.SIGKILL, 137)
    [note] = [n for n in trace.meta.not_recorded if n.what == "the end of the run"]
    assert f"graphdoctor was sent {name} and passed it on" in note.why


# A script that says whether it runs with Ctrl-C ignored, and its pid, then ends on its own
# after ESCALATE_AFTER_S and a little more.
ON_ITS_OWN = f"""
import os, signal, sys, time
{{ignore}}
with open("ignored", "w") as out:
    out.write(str(signal.getsignal(signal.SIGINT) == signal.SIG_IGN))
with open("pids.tmp", "w") as out:
    out.write(str(os.getpid()))
os.replace("pids.tmp", "pids")
time.sleep({ESCALATE_AFTER_S + 3})
print("ended on its own")
"""


def started_ignoring_ctrl_c() -> None:
    """graphdoctor started as a shell starts a background job: SIGINT ignored."""
    as_a_job()
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize("how", ["by the script", "from its start"])
def test_a_script_that_ignores_ctrl_c_runs_on_as_without_graphdoctor(tmp_path: Path,
                                                                     how: str) -> None:
    """Plain Python ignores the Ctrl-C it was told to ignore; under graphdoctor the script
    was killed 10 s later."""
    ignore = "signal.signal(signal.SIGINT, signal.SIG_IGN)" if how == "by the script" else ""
    (tmp_path / "script.py").write_text(textwrap.dedent(ON_ITS_OWN.format(ignore=ignore)))
    parent = subprocess.Popen(
        [sys.executable, "-m", "graphdoctor", "run", "-o", "report.json", "script.py"],
        cwd=tmp_path, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        preexec_fn=as_a_job if how == "by the script" else started_ignoring_ctrl_c)
    pids = pids_of(tmp_path / "pids", parent)
    try:
        os.kill(parent.pid, signal.SIGINT)
        time.sleep(0.5)
        os.kill(parent.pid, signal.SIGINT)  # a second Ctrl-C, as impatient people press
        stdout, stderr = parent.communicate(timeout=120)
    finally:
        end_leftovers(pids)
    assert parent.returncode == 0 and "ended on its own" in stdout, stderr
    assert (tmp_path / "ignored").read_text() == "True"
    status = load(tmp_path / "report.json").trace.status
    assert status.complete and status.reason == EXITED and status.exit_code == 0
    assert "killing it" not in stderr


def test_a_scratch_file_that_cannot_be_removed_is_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    request = RunRequest("script.py", (), False, RunFiles(tmp_path / "r.spool"))
    request.files.spool.write_text("")
    fault = request.files.spool.with_suffix(".fault")
    fault.write_text("")
    tail = request.files.tail
    tail.mkdir()  # a folder in its place: unlink fails, as in a folder made read-only
    (tail / "kept").write_text("")
    close_spools(request, RunEnd(0, EXITED, None, 1), Leftovers())
    said = capsys.readouterr().err
    assert f"graphdoctor: could not remove {tail} (" in said and str(fault) not in said
    assert not fault.exists() and tail.is_dir()
    assert [record[0] for record in read_records(request.files.spool)] == ["run_end"]
