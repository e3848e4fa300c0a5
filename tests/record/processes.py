"""Watching the processes a test starts, through /proc."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterable
from pathlib import Path

ENDED_WITHIN_S = 2.0
HAS_PROC = Path("/proc/self/stat").exists()


def wait_for(condition: Callable[[], bool], within: float, what: str) -> None:
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} within {within} s")
        time.sleep(0.05)


def state(pid: int) -> str:
    """The process's state letter (R, S, T for stopped...), or "" once it is gone or a
    zombie nobody has reaped yet."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return ""
    letter = stat.rpartition(")")[2].split()[0]
    return "" if letter in "ZX" else letter


def assert_gone(pids: Iterable[int], within: float = ENDED_WITHIN_S) -> None:
    pids = list(pids)
    wait_for(lambda: not any(state(pid) for pid in pids), within,
             f"processes {[p for p in pids if state(p)]} were still running")


def with_default_signals() -> None:
    """In a process the test starts (``preexec_fn``): the default action for the signals the
    test sends, whatever the test run inherited (``nohup``, a job started in the
    background): a signal ignored there stays ignored in every process started below."""
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(signum, signal.SIG_DFL)
