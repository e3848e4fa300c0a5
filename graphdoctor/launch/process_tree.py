"""The processes below a process, read from ``/proc``, and the means to end them all.

A script can start a process in a session of its own (``start_new_session=True``, a daemon),
out of reach of the process groups graphdoctor signals. Such a process is still a
descendant, found by following parent pids down from graphdoctor; and once its parent dies,
Linux hands it to the nearest ancestor that asked to be a *subreaper* (``prctl
PR_SET_CHILD_SUBREAPER``) rather than to init, so graphdoctor, being one, still finds it.

Where there is no ``/proc`` (macOS) no descendant is found, and where ``prctl`` is missing
orphans go to init: the process groups alone are ended there, as before.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

_PROC = Path("/proc")
_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37
# A process that forks while the tree is being stopped is found on the next pass; a tree
# that keeps growing past this many passes is a fork bomb, killed as far as it was seen.
_STOP_PASSES = 20


@dataclass(frozen=True)
class Process:
    pid: int
    parent: int
    name: str  # the command's name, as the kernel keeps it (15 characters at most)
    zombie: bool  # ended, waiting for its parent to reap it


def processes() -> dict[int, Process]:
    """Every process of the system, by pid; {} without /proc."""
    table: dict[int, Process] = {}
    try:
        entries = list(_PROC.iterdir())
    except OSError:
        return table
    for entry in entries:
        if entry.name.isdigit() and (process := _read(entry)) is not None:
            table[process.pid] = process
    return table


def _read(entry: Path) -> Process | None:
    try:
        stat = (entry / "stat").read_text(errors="replace")
    except OSError:  # it ended between the listing and the read
        return None
    # "pid (name) state ppid ...": the name may hold spaces and parentheses
    head, _, rest = stat.rpartition(")")
    fields = rest.split()
    if len(fields) < 2:
        return None
    return Process(int(entry.name), int(fields[1]), head.partition("(")[2], fields[0] in "ZX")


def descendants(root: int, spared: Iterable[int] = (),
                table: dict[int, Process] | None = None) -> list[Process]:
    """The processes below ``root``, zombies included, leaving out ``spared`` and all
    below them."""
    table = processes() if table is None else table
    children: dict[int, list[Process]] = {}
    for process in table.values():
        children.setdefault(process.parent, []).append(process)
    skipped, found, todo = set(spared), [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child.pid not in skipped:
                found.append(child)
                todo.append(child.pid)
    return found


def running(found: Iterable[Process]) -> list[Process]:
    return [process for process in found if not process.zombie]


def children_of(pid: int) -> set[int]:
    return {process.pid for process in processes().values() if process.parent == pid}


def signal_each(pids: Iterable[int], signum: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except (ProcessLookupError, PermissionError):
            pass


def kill_below(root: int, spared: Iterable[int] = ()) -> set[int]:
    """SIGKILL every process below ``root`` (but ``spared`` and theirs); return their pids.

    Each is stopped first and the tree read again until no new one appears: a stopped
    process forks nothing, and a parent killed before its children were listed would hand
    them to init, out of sight."""
    stopped: set[int] = set()
    for _ in range(_STOP_PASSES):
        new = {p.pid for p in running(descendants(root, spared))} - stopped
        if not new:
            break
        signal_each(new, signal.SIGSTOP)
        stopped |= new
    signal_each(stopped, signal.SIGKILL)
    return stopped


def reap(pids: Iterable[int]) -> None:
    """Collect the exit status of each of this process's children among ``pids`` that has
    ended, so that none stays a zombie; never waits."""
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # not this process's child, or reaped already
            pass


@contextmanager
def adopting_orphans() -> Iterator[set[int]]:
    """Be a subreaper while in effect, so that the orphans of the processes started meanwhile
    come to this process rather than init. Yields the children this process had before,
    whose trees are not the run's."""
    before = children_of(os.getpid())
    previous = _set_subreaper(True)
    try:
        yield before
    finally:
        if previous is False:
            _set_subreaper(False)


def _set_subreaper(on: bool) -> bool | None:
    """Turn the subreaper flag on or off; return what it was, or None where it cannot be
    set (not Linux, no prctl, a sandbox refusing it)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        was = ctypes.c_int(0)
        if libc.prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(was), 0, 0, 0) != 0:
            return None
        if libc.prctl(_PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) != 0:
            return None
    except (OSError, AttributeError):
        return None
    return bool(was.value)
