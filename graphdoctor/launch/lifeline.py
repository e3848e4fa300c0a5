"""End with the parent: a process under ``graphdoctor run`` that outlives its parent ends.

``graphdoctor run`` can be killed by a signal it cannot catch (SIGKILL, the OOM killer), so
each process below it watches its own parent: the recording child and a distributed run's
launcher watch graphdoctor, each rank watches the launcher. Once the parent is gone, the
process writes out what it holds and ends its process group, which holds whatever it started.

A thread polls ``os.getppid()``, which changes as soon as the parent dies (init or a
subreaper adopts the orphan) on every POSIX system. A process stopped by Ctrl-Z runs no
thread, so on Linux the kernel is also asked to send SIGCONT when the parent dies: it wakes
a stopped process and does nothing to a running one. (A signal that kills would end the
process before it could write its last records.)
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time
from collections.abc import Callable

# graphdoctor's pid, for the process it starts: a parent that dies before the watch begins
# is still noticed. That process removes it, so that its own children watch their parent.
PARENT_ENV = "GRAPHDOCTOR_PARENT"
POLL_S = 0.1
_PR_SET_PDEATHSIG = 1


def end_with_parent(before_ending: Callable[[], object] = lambda: None) -> None:
    """Watch this process's parent from a daemon thread; when it dies, call
    ``before_ending`` and end this process and its group."""
    expected = int(os.environ.pop(PARENT_ENV, "0")) or os.getppid()
    _wake_when_orphaned()
    threading.Thread(target=_watch, args=(expected, before_ending), daemon=True,
                     name="graphdoctor-lifeline").start()


def _watch(parent: int, before_ending: Callable[[], object]) -> None:
    while os.getppid() == parent:
        time.sleep(POLL_S)
    try:
        before_ending()
    finally:
        end_own_group()


def end_own_group() -> None:
    """SIGKILL this process's group when it leads one (what it started is in it); otherwise
    this process alone, never a group it merely belongs to."""
    if os.getpgrp() == os.getpid():
        os.killpg(os.getpid(), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)


def _wake_when_orphaned() -> None:
    """prctl(PR_SET_PDEATHSIG, SIGCONT) on Linux; elsewhere the polling thread alone."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGCONT), 0, 0, 0)
    except (OSError, AttributeError):
        pass
