"""The spools of the processes a run followed, closed once the run is over.

Each Python process the script started (and theirs) that imported torch recorded into a
spool of its own beside its recording process's (:meth:`graphdoctor.files.run_files.
RunFiles.children`; :mod:`graphdoctor.record.processes.follow`). Once the run is over (the script
has
ended or been ended, and whatever it left running with it), each spool gets what the
script's gets: what its tail still held, and a ``run_end`` record saying how the process
ended, as far as graphdoctor can tell:

- by itself, where it wrote its end record at exit;
- by a signal, where faulthandler wrote a fatal error into its fault file (with its stacks);
- with the run, where the run timed out or graphdoctor was told to stop;
- ended by graphdoctor, where it was still running when the run was over;
- otherwise without Python's exit (``os._exit``, or a signal faulthandler does not catch,
  such as its parent's SIGKILL), which is all a report can say of it.

The tail and fault files are removed then, and a spool nothing was written to (a process
that could not start recording) with them.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphdoctor.files.run_files import RunFiles
from graphdoctor.launch.leftovers import Leftovers
from graphdoctor.launch.notice import tell
from graphdoctor.launch.process_tree import descendants
from graphdoctor.trace.endings import EXITED, INTERRUPTED, SIGNALLED, TIMED_OUT
from graphdoctor.trace.spool import records as sr
from graphdoctor.trace.spool.file import appended_or_kept, encoded, records_in
from graphdoctor.trace.spool.tail import unappended

# The fatal errors faulthandler names, and the signal behind each.
FATAL_ERRORS = {"Segmentation fault": signal.SIGSEGV, "Aborted": signal.SIGABRT,
                "Bus error": signal.SIGBUS, "Floating point exception": signal.SIGFPE,
                "Illegal instruction": signal.SIGILL}
END = sr.TAGS[sr.End]  # the record a process writes as Python ends it
SCAN_BYTES = 1 << 16  # the end record is the last a process writes: it lies in the last lines
ENDED_BY_GRAPHDOCTOR = ("it was still running when the run was over, so graphdoctor ended it "
                        "(SIGTERM, then SIGKILL)")


@dataclass(frozen=True)
class RunOver:
    """How the run ended, for the processes it followed."""

    reason: str  # one of graphdoctor.trace.endings
    timeout_s: float | None
    leftovers: Leftovers = field(default_factory=Leftovers)


@dataclass(frozen=True)
class Closed:
    files: tuple[RunFiles, ...] = ()  # each followed process's, in the order found
    unwritten: dict[Path, bytes] = field(default_factory=dict)  # as RunEnd.unwritten


def close_children(run: RunFiles, over: RunOver) -> Closed:
    """Close the spool of every process the run followed (see the module doc)."""
    kept: list[RunFiles] = []
    unwritten: dict[Path, bytes] = {}
    stuck: list[str] = []
    for pid, files in run.children():
        pending = unappended(files.spool, files.tail)
        if _size(files.spool) or pending:
            kept.append(files)
            left = _close(pid, files, pending, over)
            if left:
                unwritten[files.spool] = left
        else:
            stuck += _removed([files.spool])
        stuck += _removed([files.tail, files.fault])
    if stuck:
        tell(f"graphdoctor: could not remove {'; '.join(stuck)}; the report does not need them")
    return Closed(tuple(kept), unwritten)


def _close(pid: int, files: RunFiles, pending: bytes, over: RunOver) -> bytes:
    """Append what the tail held and ``run_end``; what could not be appended."""
    records = [*records_in(_last_bytes(files.spool)), *records_in(pending)]
    stacks = _read(files.fault)
    # (an end record: an earlier process of that pid, the system having given it out again)
    left_running = pid in {p.pid for p in over.leftovers.ended} and not _ended(records)
    ended_by = 0 if not left_running else \
        signal.SIGKILL if pid in over.leftovers.killed else signal.SIGTERM
    run_end = sr.RunEnd(_ending(records, stacks, over, ended_by))
    notes = [sr.NoteRecord("the end of the process", ENDED_BY_GRAPHDOCTOR)] \
        if left_running else []
    left, why = appended_or_kept(files.spool, pending + encoded([*notes, run_end]))
    if left:
        run_end.info["spool_error"] = why
        return left + encoded([run_end])
    return b""


def _ending(records: list[list[Any]], stacks: str, over: RunOver,
            ended_by: int) -> dict[str, Any]:
    """The process's ``run_end``: its exit as it recorded it, else what ended it (the signal
    graphdoctor ended it with, ``ended_by``, where it outlived the script)."""
    end: dict[str, Any] = {"exit_code": None, "reason": EXITED, "signal": None,
                           "timeout_s": over.timeout_s, "stacks": stacks[-200_000:],
                           "wall_ns": _wall_ns(records)}
    fatal = fatal_signal(stacks)
    if _ended(records):
        return end
    if fatal is not None:
        return {**end, "reason": SIGNALLED, "signal": fatal, "exit_code": 128 + fatal}
    if over.reason in (TIMED_OUT, INTERRUPTED):
        return {**end, "reason": over.reason, "signal": signal.SIGKILL}
    if ended_by:
        return {**end, "reason": SIGNALLED, "signal": ended_by, "exit_code": 128 + ended_by}
    return end


def _ended(records: list[list[Any]]) -> bool:
    """Whether the process wrote its end record, at exit."""
    return any(record[:1] == [END] for record in records)


def fatal_signal(stacks: str) -> int | None:
    """The signal of the fatal error faulthandler wrote first in ``stacks``, if any."""
    for line in stacks.splitlines():
        if line.startswith("Fatal Python error: "):
            return FATAL_ERRORS.get(line.removeprefix("Fatal Python error: ").strip())
    return None


def _wall_ns(records: list[list[Any]]) -> int:
    """How long the process recorded, from its end record."""
    for record in reversed(records):
        if record[:1] == [END] and len(record) > 1 and isinstance(record[1], dict):
            wall_ns = record[1].get("wall_ns")
            return wall_ns if isinstance(wall_ns, int) else 0
    return 0


def live_pids(run: RunFiles) -> list[int]:
    """The followed processes still running below graphdoctor, for the stacks of a time-out:
    a pid from a spool's name alone may be another process's by now."""
    below = {p.pid for p in descendants(os.getpid()) if not p.zombie}
    return [pid for pid, _ in run.children() if pid in below]


def _last_bytes(path: Path) -> bytes:
    try:
        with open(path, "rb") as spool:
            spool.seek(max(0, os.fstat(spool.fileno()).st_size - SCAN_BYTES))
            return spool.read(SCAN_BYTES)
    except OSError:
        return b""


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _removed(paths: Iterable[Path]) -> list[str]:
    """Remove each file; those that stay, and why."""
    stuck = []
    for path in paths:
        try:
            path.unlink(missing_ok=True)
        except OSError as error:
            stuck.append(f"{path} ({error.strerror or error})")
    return stuck
