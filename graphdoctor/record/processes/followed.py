"""Recording a Python process the script started, from the moment it imports torch (how it
comes to be followed: :mod:`graphdoctor.record.processes.follow`).

It records as the script's own process does (the recorder and its sources, a thread that
writes the records out twice a second, faulthandler's stacks at a crash) into files of its
own, named from those of the recording process it descends from
(:meth:`~graphdoctor.files.run_files.RunFiles.of_process`) and created exclusively. Its
first record names it: its pid, its parent's, its command line.

Only its run is not graphdoctor's to start: the process runs its own main as it would, so
its end is seen from inside, at exit (``atexit``): the exception that ended it (exit code
1) where one did, or an exit whose code Python gives its parent alone (recorded as
unknown). A process that ends without Python's exit (a crash, a signal, ``os._exit``)
leaves no end record: ``graphdoctor run`` reads which it was from its fault file once the
run is over (:mod:`graphdoctor.launch.children`).

What the process sees of it: the recorder's hooks in torch, as the script's process does;
graphdoctor's thread and its exit function; faulthandler on, unless the process had turned
it on itself (it is then left as it was, and a crash's stacks are not recorded).
"""

from __future__ import annotations

import atexit
import faulthandler
import os
import sys
import time
from pathlib import Path
from typing import IO

import torch

from graphdoctor.files.run_files import RunFiles
from graphdoctor.launch.child_process import DUMP_STACKS_SIGNAL
from graphdoctor.record.child import Flusher, Sources, stop_recorder
from graphdoctor.record.errors import record_exception
from graphdoctor.record.processes.follow import own_helper
from graphdoctor.record.recorder import Recorder, new_recorder, register_fork_guard
from graphdoctor.trace.names import CHILD_TARGET, RECORDING_NOTE, UNCAUGHT
from graphdoctor.trace.spool import records as sr
from graphdoctor.trace.spool.file import SpoolWriter
from graphdoctor.version import __version__

CRASH_STACKS = "stacks at a crash"
MOST_AGAIN = 99  # processes of one pid recorded in one run (the system reuses pids)
# The fault files of this process: faulthandler writes into them until the process ends.
_KEPT: list[IO[str]] = []


def start(parent_spool: str, mode: str) -> None:
    """Record this process, which has just imported torch, into files of its own named from
    ``parent_spool``; not where it runs a script of torch's own."""
    if own_helper(sys.argv[0] if sys.argv else "", os.path.dirname(torch.__file__)):
        return
    files = _created(RunFiles(Path(parent_spool)))
    spool = SpoolWriter(files.spool, tail=files.tail)
    try:
        _record(files, spool, mode)
    except Exception as error:  # noqa: BLE001 - the process runs on; its spool says why
        spool.write(sr.NoteRecord(RECORDING_NOTE, f"graphdoctor could not record this process "
                                  f"({error!r}); it ran without instrumentation"))
        spool.close()


def _record(files: RunFiles, spool: SpoolWriter, mode: str) -> None:
    """faulthandler's stacks to the fault file, the first record, the recorder and its
    sources, the thread that writes the records out, and the end at exit."""
    unarmed = _arm_faulthandler(files.fault)
    spool.write(sr.Hello(hello(mode)))
    recorder = new_recorder(spool, mode)
    register_fork_guard(recorder)  # a forked copy of this process must not write here
    if unarmed:
        recorder.note(CRASH_STACKS, unarmed)
    Sources(recorder).install()
    flusher = Flusher(spool, recorder)
    flusher.start()
    atexit.register(_at_exit, recorder, flusher, os.getpid())


def hello(mode: str) -> dict[str, object]:
    """The first record of a followed process: who it is, and who started it."""
    return {"version": 1, "tool_version": __version__, "pid": os.getpid(),
            "parent_pid": os.getppid(), "command": list(sys.orig_argv), "argv": [],
            "target": sys.argv[0] if sys.argv else "", "target_kind": CHILD_TARGET,
            "cwd": os.getcwd(), "mode": mode,
            "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


def _created(recording: RunFiles) -> RunFiles:
    """This process's files, created empty and exclusively (never another file of that
    name): named by its pid, or, where an earlier process of the run had that pid, by the
    next free ``again``."""
    for again in range(1, MOST_AGAIN + 1):
        files = recording.of_process(os.getpid(), again)
        try:
            _create(files)
        except FileExistsError:
            continue
        return files
    raise FileExistsError(f"{MOST_AGAIN} processes of pid {os.getpid()} recorded already")


def _create(files: RunFiles) -> None:
    """Create the spool, its tail and its fault file; none of them where one cannot be."""
    made: list[Path] = []
    try:
        for path in (files.spool, files.tail, files.fault):
            path.open("xb").close()
            made.append(path)
    except OSError:
        for path in made:
            path.unlink(missing_ok=True)
        raise


def _arm_faulthandler(path: Path) -> str:
    """faulthandler's stacks to the fault file, at a crash and when ``graphdoctor run`` asks
    (a time-out); "" once done, else why a crash's stacks are not recorded."""
    fault = open(path, "w")  # noqa: SIM115 - it must outlive every frame, even a crash's
    _KEPT.append(fault)
    if hasattr(faulthandler, "register"):
        faulthandler.register(DUMP_STACKS_SIGNAL, fault, all_threads=True, chain=False)
    if faulthandler.is_enabled():
        return ("the process had turned faulthandler on itself, so it was left as it was: a "
                "crash's stacks go where the process sends them")
    faulthandler.enable(fault, all_threads=True)
    return ""


def _at_exit(recorder: Recorder, flusher: Flusher, pid: int) -> None:
    """The end of the process as Python ends it: what ended it, then the recorder's own
    end; never in a forked copy of the process, whose recorder writes nothing."""
    if os.getpid() != pid:
        return
    try:
        error = uncaught()
        if error is not None:
            record_exception(recorder, error, UNCAUGHT)
        stop_recorder(recorder)
        flusher.stop()
        interrupted = isinstance(error, KeyboardInterrupt)  # Python then dies by SIGINT
        recorder.spool.write(sr.End({
            "exit_code": 1 if error is not None and not interrupted else None,
            "interrupted": interrupted, "wall_ns": recorder.now()}))
        recorder.spool.close()
    except Exception:  # noqa: BLE001 - the process ends as it would; its spool says less
        return


def uncaught() -> BaseException | None:
    """The exception that is ending this process, which Python keeps in ``sys.last_value``
    (``sys.last_exc`` from 3.12) once it has printed it; None at any other exit."""
    error = getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)
    return error if isinstance(error, BaseException) else None
