"""Start and stop a recording inside the child: build the recorder, install every source,
and at the end settle what is still pending (GPU times, allocator history, counters)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

import torch

from graphdoctor.record import compat
from graphdoctor.record.capture import graphs, kept_outputs
from graphdoctor.record.compile import compiled
from graphdoctor.record.device import devices, memory
from graphdoctor.record.device.timing import EventTimer
from graphdoctor.record.eager import eager_history
from graphdoctor.record.errors import record_exception
from graphdoctor.record.frozen import frozen_values
from graphdoctor.record.host import distributed, streams, syncs
from graphdoctor.record.recorder import OFF_ENV, Recorder, Uninstall
from graphdoctor.trace.names import CUDA_AT_END, CUDA_AT_INIT, IN_THREAD
from graphdoctor.trace.spool import records as sr

Source = Callable[[Recorder], Uninstall | None]


def sources(watch: memory.AllocatorWatch) -> tuple[Source, ...]:
    """Every source, in the order they are installed. Sources import none of each other;
    what they share is on the recorder, typed: the eager history (installed first, so it
    keeps calls from the start; ``graphs`` and ``compiled`` claim them, ``frozen_values``
    asks it what numbers a function was given), the GPU timer (started here once CUDA is
    up), the compiled call in progress (opened by ``compiled``, marked captured or replayed
    by ``graphs``), the frozen values and the outputs kept across replays (both on
    ``recorder.frozen``, told by ``graphs`` of each manual capture and sampled replay), and
    the allocator watch, wired here: ``graphs`` asks it (``recorder.memory``) at each
    capture boundary and sampled replay, even when the "memory" source (the watch's own
    install, which only turns --full's history on) is off.
    """
    return (eager_history.install, graphs.install, frozen_values.install,
            kept_outputs.install, syncs.install, streams.install, watch.install,
            compiled.install, distributed.install, devices.install)


def part_of(source: Source) -> str:
    """The part of the recording a source is, as ``GRAPHDOCTOR_OFF`` names it: its module."""
    return source.__module__.rsplit(".", 1)[-1]


# The recorder whose sources are installed in this process: one at a time, since they patch
# torch itself (the child's, or one of graphdoctor.check's in the user's own process).
_running: list[Recorder] = []


def running() -> Recorder | None:
    """The recorder started in this process and not stopped yet, if any."""
    return _running[0] if _running else None


def start(recorder: Recorder) -> Recorder:
    """Install every source on a recorder made by ``new_recorder``, once torch is imported.
    RuntimeError if another recorder is running in this process."""
    if _running:
        raise RuntimeError("another graphdoctor recording is running in this process")
    _running.append(recorder)
    off = recorder.config.off
    recorder.emit(sr.MetaInfo(devices.environment() | {"clock_unix_ns": recorder.unix0}))
    watch = memory.AllocatorWatch(recorder)
    recorder.memory = watch
    recorder.install([s for s in sources(watch) if part_of(s) not in off])
    for part in sorted(off):
        recorder.note(part, f"switched off by {OFF_ENV}")
    if not compat.cuda_built():
        recorder.note("CUDA", "this torch build has no CUDA support")
    elif not compat.lazy_cuda_call(lambda: _cuda_up(recorder)):
        recorder.note("GPU times", "torch.cuda._lazy_call is missing")
    if not recorder.nvtx.enable():
        recorder.note("NVTX ranges", "the nvtx package is not installed")
    _watch_thread_exceptions(recorder)
    return recorder


def _cuda_up(recorder: Recorder) -> None:
    """Once the script initializes CUDA (unless the recording has stopped by then): say so
    at once, for a run that dies before its end reads the CUDA state, and time replays and
    calls on the GPU from then on."""
    if recorder not in _running:
        return
    recorder.emit(sr.CudaState({**_cuda_state(), "initialized": True, "when": CUDA_AT_INIT}))
    if "timing" not in recorder.config.off:
        recorder.timer = EventTimer(recorder)


def stop(recorder: Recorder) -> None:
    """Settle what is pending and remove every source, even where settling fails."""
    try:
        _settle(recorder)
    finally:
        recorder.nvtx.disable()
        recorder.uninstall()
        if recorder in _running:
            _running.remove(recorder)


def _settle(recorder: Recorder) -> None:
    initialized = compat.cuda_built() and _cuda_initialized()
    if initialized and recorder.timer is not None:
        recorder.timer.resolve(wait=True)
        recorder.emit(sr.Untimed(recorder.timer.untimed))
    if initialized and recorder.memory is not None:
        recorder.memory.finish()
        recorder.memory.sample(-1)
    if recorder.frozen is not None:
        recorder.frozen.finish(dict(recorder.replays))
    recorder.emit(sr.CudaState({**_cuda_state(), "when": CUDA_AT_END}))


def _cuda_initialized() -> bool:
    initialized: Callable[[], bool] = torch.cuda.is_initialized  # unannotated in torch
    return initialized()


def _cuda_state() -> dict[str, Any]:
    try:
        available = torch.cuda.is_available()
        count = torch.cuda.device_count() if available else 0
    except Exception:  # noqa: BLE001
        available, count = False, 0
    return {"built": compat.cuda_built(), "available": available, "device_count": count,
            "initialized": compat.cuda_built() and _cuda_initialized()}


def _watch_thread_exceptions(recorder: Recorder) -> None:
    """Record what a thread did not catch, without taking ``threading.excepthook``, which
    stays the script's: each thread made from now on gets its own call of that hook from
    ``threading._make_invoke_excepthook`` (3.8 to 3.13 at least), which is wrapped instead."""
    make_invoke = getattr(threading, "_make_invoke_excepthook", None)
    if make_invoke is None:
        recorder.note("exceptions in threads", "threading._make_invoke_excepthook is missing")
        return

    def make_recording_invoke() -> Callable[[Any], None]:
        invoke = make_invoke()

        def invoke_excepthook(thread: Any) -> None:
            error = sys.exc_info()[1]  # a thread's run() raised it; its hook is called next
            if error is not None and recorder.enabled:
                record_exception(recorder, error, IN_THREAD, recorder.capturing_graph())
            invoke(thread)

        return invoke_excepthook

    setattr(threading, "_make_invoke_excepthook", make_recording_invoke)  # noqa: B010
    recorder.add_uninstall(lambda: setattr(threading, "_make_invoke_excepthook", make_invoke))
