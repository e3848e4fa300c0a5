"""End what a run left running: the whole process tree ends with the run.

Once the script has ended (or been ended), graphdoctor looks below itself for processes the
run started that are still there: a helper started in a session of its own, a daemon, a
worker whose parent died. Each is given a moment to end by itself (workers told to stop are
still winding down), then SIGTERM, then SIGKILL, and reaped: left running, one would hold
graphdoctor's stdout open (``graphdoctor run x.py | grep`` would never end) and go on using
the GPU. The children graphdoctor had before the run, and theirs, are not the run's and are
left alone.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterable
from dataclasses import dataclass

from graphdoctor.launch.notice import listed, processes
from graphdoctor.launch.process_tree import (
    Process,
    descendants,
    kill_below,
    reap,
    running,
    signal_each,
)

SETTLE_S = 1.0  # for what is still winding down when the script ended to end by itself
TERM_GRACE_S = 2.0  # between SIGTERM and SIGKILL
KILLED_WITHIN_S = 5.0  # SIGKILL can wait on a process in the kernel (a GPU driver call)
_KILL_PASS_S = 1.0  # then the tree is read again, for what appeared meanwhile
_POLL_S = 0.05


@dataclass(frozen=True)
class Leftovers:
    ended: tuple[Process, ...] = ()  # running when the run was over
    remaining: tuple[int, ...] = ()  # the pids still there after SIGKILL
    killed: tuple[int, ...] = ()  # the pids SIGTERM did not end, sent SIGKILL

    def line(self) -> str:
        """graphdoctor's one line on them; "" when there were none."""
        if not self.ended:
            return ""
        line = (f"graphdoctor: ended {processes(len(self.ended))} the script left running "
                f"({self.described()})")
        if self.remaining:
            line += f"; still there: {', '.join(map(str, self.remaining))}"
        return line

    def described(self) -> str:
        return listed([(p.pid, p.name) for p in self.ended])


def end_leftovers(spared: Iterable[int] = ()) -> Leftovers:
    """End every process still below graphdoctor but ``spared`` (and those below them)."""
    spared = set(spared)
    left = _gone_within(SETTLE_S, spared)
    if not left:
        return Leftovers()
    signal_each((p.pid for p in left), signal.SIGTERM)
    signal_each((p.pid for p in left), signal.SIGCONT)  # a stopped process cannot act on it
    remaining = _gone_within(TERM_GRACE_S, spared)
    killed = tuple(p.pid for p in remaining)
    if remaining:
        remaining = _killed(spared)
    return Leftovers(tuple(left), tuple(p.pid for p in remaining), killed)


def _killed(spared: set[int]) -> list[Process]:
    """SIGKILL what SIGTERM left, again for what appears meanwhile, until nothing is left
    or ``KILLED_WITHIN_S`` has passed; return what is still running."""
    deadline = time.monotonic() + KILLED_WITHIN_S
    while True:
        kill_below(os.getpid(), spared)
        remaining = _gone_within(_KILL_PASS_S, spared)
        if not remaining or time.monotonic() >= deadline:
            return remaining


def _gone_within(seconds: float, spared: set[int]) -> list[Process]:
    """Wait up to ``seconds`` for the processes below graphdoctor to end, reaping those
    that were handed to it; return those still running."""
    deadline = time.monotonic() + seconds
    while True:
        below = descendants(os.getpid(), spared)
        reap(p.pid for p in below if p.zombie and p.parent == os.getpid())
        left = running(below)
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(_POLL_S)
