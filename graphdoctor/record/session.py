"""Start and stop a recording inside the child: build the recorder, install every source,
and at the end settle what is still pending (GPU times, allocator history, counters)."""

from __future__ import annotations

import threading
from typing import Any

import torch

from graphdoctor.record import (
    compat,
    compiled,
    devices,
    distributed,
    graphs,
    memory,
    nvtx_ranges,
    streams,
    syncs,
)
from graphdoctor.record.errors import record_exception
from graphdoctor.record.recorder import OFF_ENV, Recorder
from graphdoctor.record.timing import EventTimer

# Installed in this order; each source is independent of the others.
SOURCES = (graphs.install, syncs.install, streams.install, memory.install, compiled.install,
           distributed.install, devices.install)


def start(recorder: Recorder) -> Recorder:
    """Install every source on a recorder made by ``new_recorder``, once torch is imported."""
    off = recorder.config.off
    recorder.emit(["meta", devices.environment()])
    recorder.install([s for s in SOURCES if s.__module__.rsplit(".", 1)[-1] not in off])
    for part in sorted(off):
        recorder.note(part, f"switched off by {OFF_ENV}")
    if compat.cuda_built() and "timing" not in off:
        if not compat.lazy_cuda_call(lambda: setattr(recorder, "timer", EventTimer(recorder))):
            recorder.note("GPU times", "torch.cuda._lazy_call is missing")
    else:
        recorder.note("CUDA", "this torch build has no CUDA support")
    if not nvtx_ranges.enable():
        recorder.note("NVTX ranges", "the nvtx package is not installed")
    _watch_thread_exceptions(recorder)
    return recorder


def stop(recorder: Recorder) -> None:
    initialized = compat.cuda_built() and torch.cuda.is_initialized()
    if initialized and recorder.timer is not None:
        recorder.timer.resolve(wait=True)
        recorder.emit(["untimed", recorder.timer.untimed])
    if initialized:
        memory.finish(recorder)
        memory.sample(recorder, -1)
    recorder.emit(["cuda_state", _cuda_state()])
    nvtx_ranges.disable()
    recorder.uninstall()


def _cuda_state() -> dict[str, Any]:
    try:
        available = torch.cuda.is_available()
        count = torch.cuda.device_count() if available else 0
    except Exception:  # noqa: BLE001
        available, count = False, 0
    return {"built": compat.cuda_built(), "available": available, "device_count": count,
            "initialized": compat.cuda_built() and torch.cuda.is_initialized()}


def _watch_thread_exceptions(recorder: Recorder) -> None:
    original = threading.excepthook

    def excepthook(args: Any) -> None:
        if args.exc_value is not None and recorder.enabled:
            record_exception(recorder, args.exc_value, "thread", recorder.capturing_graph())
        original(args)

    threading.excepthook = excepthook
    recorder.add_uninstall(lambda: setattr(threading, "excepthook", original))
