"""Running a native program under the injection library, from the recording child.

The child starts the program in the process group graphdoctor signals, its own (so the
signals graphdoctor passes on reach the program, as they reach a script), with
``CUDA_INJECTION64_PATH`` naming the library and ``GRAPHDOCTOR_NATIVE_FD`` the write end of
a pipe; a thread reads the pipe into the recorder while the program runs. The library is
checked and opened here, and named to the program by its descriptor (``/proc/self/fd/N``,
which the program inherits), never by its path: what the driver loads is the file checked
(:func:`graphdoctor.record.native.build.open_library`). The child ignores
the signals it shares with the program, so that it outlives it and writes what was
recorded; the program's exit code is the run's (128+N where signal N killed it, as a shell
says).
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TextIO

from graphdoctor.errors import GraphDoctorError
from graphdoctor.files.writing import create_new
from graphdoctor.launch.runner import Outcome, Target
from graphdoctor.record.device import devices
from graphdoctor.record.native.build import open_library
from graphdoctor.record.native.translate import NativeEvents
from graphdoctor.record.recorder import Recorder
from graphdoctor.trace.names import CUPTI_PART
from graphdoctor.trace.spool import records as sr

INJECTION_ENV = "CUDA_INJECTION64_PATH"  # the driver loads this library at CUDA's start
PIPE_ENV = "GRAPHDOCTOR_NATIVE_FD"  # where the library writes its events
LIBRARY_ENV = "GRAPHDOCTOR_NATIVE_LIBRARY"  # the parent's built library, for the child
KEEP_ENV = "GRAPHDOCTOR_NATIVE_KEEP"  # a new file to copy the library's lines into
READER_GRACE_S = 10.0  # how long the last events may take to arrive after the exit
SHARED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
NOT_STARTED = 127  # as a shell says of a program it could not run


def run_native(target: Target, recorder: Recorder) -> Outcome:
    """Run ``target`` (an executable and its arguments) and record it, with the machine and
    its GPUs (NVML, read from this process: the program's GPUs are the ones its
    ``CUDA_VISIBLE_DEVICES``, which it inherits, shows); its outcome."""
    recorder.emit(sr.MetaInfo(devices.machine() | {"clock_unix_ns": recorder.unix0}))
    recorder.install([devices.install])
    try:
        return _run(target, recorder)
    finally:
        recorder.uninstall()


def _run(target: Target, recorder: Recorder) -> Outcome:
    try:
        library = open_library(os.environ.get(LIBRARY_ENV, ""))
    except GraphDoctorError as error:
        recorder.note(CUPTI_PART, f"the program was not started: {error}")
        os.write(2, f"graphdoctor: {error}\n".encode(errors="replace"))
        return Outcome(NOT_STARTED)
    read_end, write_end = os.pipe()
    events = NativeEvents(recorder, clock0=_recorder_start(recorder))
    env = {**os.environ, INJECTION_ENV: f"/proc/self/fd/{library}", PIPE_ENV: str(write_end)}
    env.pop(LIBRARY_ENV, None)
    try:
        program = subprocess.Popen([target.name, *target.args], env=env,
                                   pass_fds=(write_end, library))
    except OSError as error:
        os.close(read_end)
        os.close(write_end)
        recorder.note(CUPTI_PART, f"the program could not be started: {error}")
        return Outcome(NOT_STARTED)
    finally:
        os.close(library)
    os.close(write_end)
    with _outliving_the_program():  # after the start: an ignored signal stays so across exec
        reader = threading.Thread(target=_read, args=(read_end, events), daemon=True)
        reader.start()
        code = program.wait()
        reader.join(timeout=READER_GRACE_S)  # a daemon the program left may hold the pipe
    events.finish()
    return Outcome(code if code >= 0 else 128 - code)


def _recorder_start(recorder: Recorder) -> int:
    """The recorder's zero on CLOCK_MONOTONIC, the library's clock (perf_counter_ns, the
    recorder's, reads it too on Linux)."""
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC) - recorder.now()


def _read(read_end: int, events: NativeEvents) -> None:
    keep = _kept_lines()
    with os.fdopen(read_end, "r", encoding="utf-8", errors="replace") as lines:
        for line in lines:
            events.line(line)
            if keep is not None:
                keep.write(line)
    if keep is not None:
        keep.close()


def _kept_lines() -> TextIO | None:
    """Where ``GRAPHDOCTOR_NATIVE_KEEP`` asks for the library's lines as they came (for a
    bug report about this layer): a new file, never one that is there already."""
    path = os.environ.get(KEEP_ENV)
    if not path:
        return None
    try:
        return open(create_new(path, 0o600), "w", encoding="utf-8")
    except OSError:
        return None


@contextmanager
def _outliving_the_program() -> Iterator[None]:
    """The signals graphdoctor passes on reach the program through the process group; the
    child lets them pass, and ends when the program has. Caught and dropped, not ignored:
    graphdoctor reads a Ctrl-C ignored by the process it started as one the script ignores
    (:func:`graphdoctor.launch.relay.ignores`), and this one is the program's to act on."""
    before = {number: signal.signal(number, _let_pass) for number in SHARED_SIGNALS}
    try:
        yield
    finally:
        for number, handler in before.items():
            signal.signal(number, handler)


def _let_pass(signum: int, frame: FrameType | None) -> None:
    """A signal meant for the program, which the program's process group got too."""
