"""Recording inside the caller's own process: what ``graphdoctor.check`` and
``graphdoctor.recording`` run on.

The recorder and its sources are those of ``graphdoctor run``'s child (``new_recorder``,
``session.start``, ``session.stop``), started around a block of the caller's code and
removed when the block ends: every patch undone, the sys.monitoring tool id freed, torch's
sync debug mode and dynamo's callbacks given back, the spool closed.

What the child of ``graphdoctor run`` gives and this cannot: the recording lives in the
process it records. A crash of the block (a segfault, an abort, ``os._exit``) ends the
process before any report is written; a hang is never stopped (no time-out, no stacks at
the end); a CUDA error that poisons the context poisons the caller's. Such code belongs
under ``graphdoctor run``.

Inside a recording already running in this process (a test the pytest plugin records, a
whole run under ``graphdoctor run``) a new one joins it, since torch can be patched only
once: its report holds everything that recording holds when the block ends.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Protocol

from graphdoctor.files.writing import open_own, write_all
from graphdoctor.record import session
from graphdoctor.record.errors import record_exception
from graphdoctor.record.recorder import Recorder, new_recorder
from graphdoctor.trace.endings import EXITED
from graphdoctor.trace.names import IN_PROCESS_TARGET, UNCAUGHT
from graphdoctor.trace.spool import records as sr
from graphdoctor.trace.spool.file import SpoolWriter, append_record, file_chunks
from graphdoctor.version import __version__

_RECORDED_UNCAUGHT = "_graphdoctor_uncaught"  # set on an exception once it is recorded


class InProcessRecording(Protocol):
    spool: Path  # complete once ``finish`` returns
    recorder: Recorder  # its own, or the running one it joined

    def finish(self, error: BaseException | None) -> None:
        """The block ended (raising ``error``): stop, and leave a complete spool."""
        ...


def begin(spool: Path, label: str) -> InProcessRecording:
    """Start recording into ``spool``, or join the recording already running here."""
    running = session.running()
    if running is not None:
        return _Joined(running, spool)
    return _Own(spool, label)


class _Own:
    """A recorder of its own, on the caller's thread, for one block."""

    def __init__(self, spool: Path, label: str):
        self.spool = spool
        self._started = time.perf_counter_ns()
        self._writer = SpoolWriter(spool)
        self._writer.write(sr.Hello(_hello(label)))
        self.recorder = new_recorder(self._writer, "default")
        _owned.append(self.recorder)
        try:
            session.start(self.recorder)
        except BaseException:
            self._close(None)
            raise

    def finish(self, error: BaseException | None) -> None:
        try:
            _record_uncaught(self.recorder, error)
            self.recorder.heartbeat()  # replay counts, as the child's flusher writes them
        finally:
            self._close(error)

    def _close(self, error: BaseException | None) -> None:
        try:
            session.stop(self.recorder)
        finally:
            self.recorder.enabled = False  # a graph freed later must not write here
            _owned.remove(self.recorder)
            for record in _end_records(error, self._started):
                self._writer.write(record)
            self._writer.close()


class _Joined:
    """A block inside a recording that runs already: its spool is a copy of that one's, as
    far as it goes when the block ends."""

    def __init__(self, recorder: Recorder, spool: Path):
        self.spool = spool
        self.recorder = recorder
        self._started = time.perf_counter_ns()

    def finish(self, error: BaseException | None) -> None:
        _record_uncaught(self.recorder, error)
        _settle(self.recorder)
        _copy(self.recorder.spool.path, self.spool)
        for record in _end_records(error, self._started):
            append_record(self.spool, record)


def _copy(running: str, spool: Path) -> None:
    """The running recording's spool, as far as it goes, into this block's own (claimed
    with its report: never another file, never through a link)."""
    fd = open_own(spool, os.O_WRONLY | os.O_TRUNC)
    try:
        for chunk in file_chunks(running):
            write_all(fd, chunk)
    finally:
        os.close(fd)


def _settle(recorder: Recorder) -> None:
    """Write out what the running recorder still holds: GPU times and replay counts."""
    if recorder.timer is not None and not recorder.capturing_anywhere:
        recorder.timer.resolve(wait=True)
    recorder.heartbeat()
    recorder.spool.flush()


def _record_uncaught(recorder: Recorder, error: BaseException | None) -> None:
    """An exception that ends the block, as the child records one that ends the script;
    once, however many recordings it leaves. Not pytest's skips and the like, which are
    BaseExceptions but not errors."""
    if isinstance(error, Exception) and not getattr(error, _RECORDED_UNCAUGHT, False):
        record_exception(recorder, error, UNCAUGHT)
        try:
            setattr(error, _RECORDED_UNCAUGHT, True)
        except (AttributeError, TypeError):
            pass


def _hello(label: str) -> sr.JsonObject:
    return {"version": 1, "tool_version": __version__, "pid": os.getpid(), "argv": [],
            "target": label, "target_kind": IN_PROCESS_TARGET, "cwd": os.getcwd(),
            "mode": "default", "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


def _end_records(error: BaseException | None, started_ns: int) -> list[sr.SpoolRecord]:
    """The child's end and the parent's run_end, as if the block were a script that ran to
    its end: exit code 1 if it raised."""
    exit_code = 0 if error is None else 1
    return [sr.End({"exit_code": exit_code, "interrupted": isinstance(error, KeyboardInterrupt)}),
            sr.RunEnd({"exit_code": exit_code, "reason": EXITED, "signal": None,
                       "wall_ns": time.perf_counter_ns() - started_ns, "stacks": ""})]


# The recorders started here and not yet stopped: a process forked meanwhile (a DataLoader
# worker) must not write into their spools. One guard for the process, as the child's.
_owned: list[Recorder] = []


def _detach_after_fork() -> None:
    for recorder in _owned:
        recorder.detach_after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_detach_after_fork)
