"""End with the parent: a process under ``graphdoctor run`` that outlives its parent ends.

``graphdoctor run`` can be killed by a signal it cannot catch (SIGKILL, the OOM killer), so
each process below it watches its own parent: the recording child and a distributed run's
launcher watch graphdoctor, each rank watches the launcher. Once the parent is gone, the
process writes out what it holds and ends its process group, which holds whatever it started.
A process that records (the child, each rank) ends every process below it as well, those in
sessions of their own included; a distributed run's launcher leaves its ranks to do so.

Nobody will read the recording's scratch files then (:data:`RECORDING_ENV`): the recording
process removes its tail once its records are out, and its fault file unless faulthandler
wrote stacks there, and says in one line where the recording is kept.

A thread polls ``os.getppid()``, which changes as soon as the parent dies (init or a
subreaper adopts the orphan) on every POSIX system. A process stopped by Ctrl-Z runs no
thread, so on Linux the kernel is also asked to send SIGCONT when the parent dies: it wakes
a stopped process and does nothing to a running one. (A signal that kills would end the
process before it could write its last records.)
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from graphdoctor.files.run_files import RunFiles
from graphdoctor.launch.children import RunOver, close_children
from graphdoctor.launch.notice import tell
from graphdoctor.launch.process_tree import kill_below
from graphdoctor.trace.endings import INTERRUPTED

# graphdoctor's pid, for the process it starts: a parent that dies before the watch begins
# is still noticed. That process removes it, so that its own children watch their parent.
PARENT_ENV = "GRAPHDOCTOR_PARENT"
# The recording's files, as a JSON object (RunFiles.plain: each rank names its own from it):
# the tail and the fault file are the parent's to read, and to remove.
RECORDING_ENV = "GRAPHDOCTOR_RECORDING"
POLL_S = 0.1
SAY_WITHIN_S = 0.5
_PR_SET_PDEATHSIG = 1


def end_with_parent(before_ending: Callable[[], object] = lambda: None, *,
                    records: bool = True) -> None:
    """Watch this process's parent from a daemon thread; when it dies, end every process
    below this one (where it ``records``), call ``before_ending``, and end this process and
    its group. A launcher (``records=False``) leaves its ranks, and the recording's files,
    to the ranks' own lifelines."""
    expected = int(os.environ.pop(PARENT_ENV, "0")) or os.getppid()
    files = _recording_files() if records else None
    _wake_when_orphaned()
    threading.Thread(target=_watch, args=(expected, before_ending, files), daemon=True,
                     name="graphdoctor-lifeline").start()


def _watch(parent: int, before_ending: Callable[[], object], files: RunFiles | None) -> None:
    while os.getppid() == parent:
        time.sleep(POLL_S)
    if files is not None:  # first, so that nothing runs on below while this one writes out
        kill_below(os.getpid())
    written = False
    try:
        before_ending()
        written = True
    finally:
        if files is not None:
            _left_behind(files, written)
        end_own_group()


def end_own_group() -> None:
    """SIGKILL this process's group when it leads one (what it started is in it); otherwise
    this process alone, never a group it merely belongs to."""
    if os.getpgrp() == os.getpid():
        os.killpg(os.getpid(), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)


def _left_behind(files: RunFiles, written: bool) -> None:
    """Remove the tail once its records are in the spool (``written``), and the fault file
    unless it holds stacks; close the spools of the processes the script started; say, in
    one line, what stays and where."""
    kept = [] if written and _removed(files.tail) else [f"its last records at {files.tail}"]
    if not _removed_if_empty(files.fault):
        kept.append(f"its stacks at {files.fault}")
    kept += [f"a process it started at {child.spool}"
             for child in close_children(files, RunOver(INTERRUPTED, None)).files]
    _say_briefly(f"graphdoctor: graphdoctor itself was killed, so the script is stopped; "
                 f"its recording is kept at {', '.join(map(str, [files.spool, *kept]))}")


def _say_briefly(line: str) -> None:
    """Say it from a thread of its own, waiting ``SAY_WITHIN_S`` at most: a stderr nobody
    reads any more (a full pipe) must not keep the process from ending."""
    saying = threading.Thread(target=tell, args=(line,), daemon=True)
    saying.start()
    saying.join(SAY_WITHIN_S)


def _recording_files() -> RunFiles | None:
    """This process's recording files (its rank's, in a distributed run), from the variable
    the parent set (taken out of the environment: the script's own processes record
    nothing)."""
    try:
        return RunFiles.from_plain(json.loads(os.environ.pop(RECORDING_ENV))).own()
    except (KeyError, ValueError, TypeError):  # started by something other than graphdoctor
        return None


def _removed(path: Path) -> bool:
    try:
        os.unlink(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


def _removed_if_empty(path: Path) -> bool:
    try:
        empty = os.path.getsize(path) == 0
    except OSError:
        return True  # gone already
    return empty and _removed(path)


def _wake_when_orphaned() -> None:
    """prctl(PR_SET_PDEATHSIG, SIGCONT) on Linux; elsewhere the polling thread alone."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGCONT), 0, 0, 0)
    except (OSError, AttributeError):
        pass
