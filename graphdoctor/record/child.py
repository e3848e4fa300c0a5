"""``python -m graphdoctor.record.child``: the process that runs the user's script.

The parent passes its settings in the ``GRAPHDOCTOR_CHILD`` environment variable, the run's
files among them (each rank of a distributed run names its own from them, as the parent
does: :class:`graphdoctor.files.run_files.RunFiles`). The child opens the spool and its tail
(where batched records wait, safe from a crash), arms faulthandler (a crash writes every
thread's stack to the fault file; ``DUMP_STACKS_SIGNAL``, a real-time signal, does the same
on a time-out), runs the script as ``python`` would, with the recorder installed as soon as
the script imports torch, and exits with the script's own exit code. Should graphdoctor die
first, the child writes out its records and ends itself and all it started. Unless told not
to (``--no-children``), it offers recording to the Python processes the script starts
(:mod:`graphdoctor.record.processes.follow`).
"""

from __future__ import annotations

import faulthandler
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from graphdoctor.files.run_files import RunFiles
from graphdoctor.files.writing import open_own
from graphdoctor.launch.child_process import CHILD_ENV, DUMP_STACKS_SIGNAL
from graphdoctor.launch.lifeline import end_with_parent
from graphdoctor.launch.runner import Target, run_target
from graphdoctor.record.errors import record_exception
from graphdoctor.record.native.run import LIBRARY_ENV, run_native
from graphdoctor.record.on_torch_import import call_when_imported
from graphdoctor.record.processes import follow
from graphdoctor.record.recorder import Recorder, new_recorder, register_fork_guard
from graphdoctor.trace.names import (
    CUPTI_ENV,
    CUPTI_PART,
    MODULE_TARGET,
    PATH_TARGET,
    RECORDING_NOTE,
    UNCAUGHT,
)
from graphdoctor.trace.spool import records as sr
from graphdoctor.trace.spool.file import SpoolWriter
from graphdoctor.version import __version__


def main() -> int:
    config = json.loads(os.environ.pop(CHILD_ENV))
    files = RunFiles.from_plain(config["files"]).own()
    spool = SpoolWriter(files.spool, tail=files.tail)
    target = Target(config["target"], tuple(config["args"]), bool(config["module"]))
    if config.get("follow"):  # the Python processes the script starts record too
        follow.offer(files, config["mode"])
    else:
        follow.withdraw()
    spool.write(sr.Hello({"version": 1, "tool_version": __version__, "pid": os.getpid(),
                           "argv": config["argv"], "target": target.name,
                           "target_kind": MODULE_TARGET if target.module else PATH_TARGET,
                           "cwd": os.getcwd(), "mode": config["mode"],
                           "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}))
    _arm_faulthandler(files.fault, spool)
    recorder = new_recorder(spool, config["mode"])
    register_fork_guard(recorder)  # a forked worker must not write into this spool
    sources = Sources(recorder)
    call_when_imported(sources.install)
    stop_cupti = _start_cupti(recorder)  # below PyTorch: from the start, torch or not
    flusher = Flusher(spool, recorder)
    flusher.start()
    end_with_parent(lambda: _orphaned(spool, recorder))
    native = bool(os.environ.get(LIBRARY_ENV)) and not target.module
    outcome = run_native(target, recorder) if native else \
        run_target(target, lambda error: _record_uncaught(recorder, error))
    if stop_cupti is not None:
        _stop_cupti(recorder, stop_cupti)
    if sources.installed:
        stop_recorder(recorder)
    else:
        recorder.note(RECORDING_NOTE, NATIVE_PROGRAM if native else NEVER_IMPORTED_TORCH_CUPTI
                      if stop_cupti else NEVER_IMPORTED_TORCH)
    flusher.stop()
    spool.write(sr.End({"exit_code": outcome.exit_code, "interrupted": outcome.interrupted}))
    spool.close()
    if outcome.interrupted:
        _die_by_sigint()
    return outcome.exit_code


def _arm_faulthandler(path: Path, spool: SpoolWriter) -> None:
    """A crash's or a time-out's stacks go to the fault file, if it can be made (a folder
    out of inodes: the script runs without, and the report says so)."""
    try:  # it must outlive every frame, even a crash's
        fault = os.fdopen(open_own(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), "w")
    except OSError as error:
        spool.write(sr.NoteRecord("stacks at a crash", f"{path} could not be made ({error})"))
        return
    faulthandler.enable(fault, all_threads=True)
    if hasattr(faulthandler, "register"):
        faulthandler.register(DUMP_STACKS_SIGNAL, fault, all_threads=True, chain=False)
        # a launcher ending this rank because another failed: show where this one waited
        faulthandler.register(signal.SIGTERM, fault, all_threads=True, chain=True)


NEVER_IMPORTED_TORCH = "the script never imported torch, so nothing but its exceptions was recorded"
NATIVE_PROGRAM = ("a native program: what CUPTI saw of its graphs was recorded, at its own "
                  "functions (no Python lines)")
NEVER_IMPORTED_TORCH_CUPTI = ("the script never imported torch: only its exceptions and what CUPTI "
                              "saw of its graphs were recorded")


def _start_cupti(recorder: Recorder) -> Callable[[], None] | None:
    """The CUPTI layer, where ``GRAPHDOCTOR_CUPTI`` asks for it; what stops it."""
    if os.environ.get(CUPTI_ENV) != "1":
        return None
    from graphdoctor.record.cupti.graphs import install

    try:
        return install(recorder)
    except Exception as error:  # noqa: BLE001 - the script still runs
        recorder.note(CUPTI_PART, f"could not start: {error!r}")
        return None


def _stop_cupti(recorder: Recorder, stop: Callable[[], None]) -> None:
    try:
        stop()
    except Exception as error:  # noqa: BLE001 - the script's result matters more
        recorder.note(CUPTI_PART, f"stopping it failed: {error!r}")


class Sources:
    """Installs the recorder's sources once the script has imported torch."""

    def __init__(self, recorder: Recorder):
        self.recorder = recorder
        self.installed = False

    def install(self) -> None:
        self.installed = True
        try:
            from graphdoctor.record.session import start
        except ImportError as error:
            self.recorder.note(RECORDING_NOTE, f"graphdoctor's hooks could not be imported "
                               f"({error}); the script ran without instrumentation")
            return
        try:
            start(self.recorder)
        except Exception as error:  # noqa: BLE001 - the script still runs, uninstrumented
            self.recorder.note(RECORDING_NOTE, f"graphdoctor could not start recording "
                               f"({error!r}); the script ran without instrumentation")


def _record_uncaught(recorder: Recorder, error: BaseException) -> None:
    record_exception(recorder, error, UNCAUGHT)


def stop_recorder(recorder: Recorder) -> None:
    from graphdoctor.record.session import stop

    try:
        stop(recorder)
    except Exception as error:  # noqa: BLE001 - the script's result matters more
        recorder.spool.write(sr.NoteRecord("end of recording", f"failed: {error!r}"))


def _flush(spool: SpoolWriter, recorder: Recorder) -> None:
    recorder.heartbeat()
    spool.flush()


def _orphaned(spool: SpoolWriter, recorder: Recorder) -> None:
    try:
        _flush(spool, recorder)
    finally:
        spool.write(sr.NoteRecord("the end of the run", "graphdoctor was killed before the "
                                  "script ended, so the script was stopped"))


class Flusher(threading.Thread):
    """Writes buffered records out twice a second, so a hang loses at most that much."""

    def __init__(self, spool: SpoolWriter, recorder: Recorder):
        super().__init__(name="graphdoctor-flush", daemon=True)
        self._spool = spool
        self._recorder = recorder
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.wait(0.5):
            try:
                _flush(self._spool, self._recorder)
            except Exception:  # noqa: BLE001 - the next tick tries again; never die silently
                continue

    def stop(self) -> None:
        self._done.set()


def _die_by_sigint() -> None:
    """Exit the way Python does on an uncaught KeyboardInterrupt, so the shell sees SIGINT."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGINT)


if __name__ == "__main__":
    sys.exit(main())
