"""GPU time of eager calls without PyTorch: CUDA events through the driver, for ``--cupti``.

A script that captures through CuPy or cuda.core may never import torch, so the event timer
of :mod:`graphdoctor.record.device.timing` (torch's events) has nothing to time with. This one makes
the same measurement through the CUDA driver itself (``libcuda``, by ctypes): a pair of
pooled events brackets a call on the stream its work goes to, and the pair is read back
only once its end event has completed (``cuEventQuery``, which does not block), never while
a capture is under way, and with one ``cuCtxSynchronize`` at the end of the run.

The stream is the one the script's framework launches on at that moment, asked of it:
CuPy's current stream where CuPy is imported, else torch's once torch has CUDA up, else the
stream of the latest capture graphdoctor saw outside PyTorch (cuda.core and cuda-python
take a stream per call, and scripts time a graph's eager twin on the stream they capture
on); before any such capture, with no framework to ask, a call is left untimed rather than
timed on a stream its work may not be on. Work a call sends to another stream is outside
the pair, as with torch's timer.

Events are made in the context current when the first call is timed; a call made with
another context current is left untimed (counted, like every call left untimed).
"""

from __future__ import annotations

import ctypes
import sys
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

from graphdoctor.record.recorder import Recorder, TimerToken
from graphdoctor.trace.event_kinds import Timed

MAX_PENDING = 4096
RESOLVE_EVERY = 64
NOT_READY = 600  # CUDA_ERROR_NOT_READY: the event has not completed yet
INVALID_CONTEXT = 201  # CUDA_ERROR_INVALID_CONTEXT: no context is current on this thread


class Driver(Protocol):
    """The four event calls the timer makes (``CudaDriver``; a stand-in in tests)."""

    def new_event(self) -> int | None: ...

    def record(self, event: int, stream: int) -> int: ...

    def done(self, event: int) -> bool: ...

    def elapsed_ms(self, start: int, end: int) -> float: ...

    def synchronize(self) -> None: ...


class CudaDriver:
    """``libcuda``'s event calls. Each returns a CUresult, checked here: a call that fails
    leaves its call untimed, never raises into the script."""

    def __init__(self, lib: Any = None) -> None:
        lib = lib if lib is not None else ctypes.CDLL("libcuda.so.1")
        self._context = lib.cuCtxGetCurrent
        self._create = lib.cuEventCreate
        self._record = lib.cuEventRecord
        self._query = lib.cuEventQuery
        # CUDA 12.8 added _v2 (the old one is kept for old binaries): the newest there is
        self._elapsed = getattr(lib, "cuEventElapsedTime_v2", None) or lib.cuEventElapsedTime
        self._synchronize = lib.cuCtxSynchronize
        self._record.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        self._query.argtypes = [ctypes.c_void_p]
        self._elapsed.argtypes = [ctypes.POINTER(ctypes.c_float), ctypes.c_void_p,
                                  ctypes.c_void_p]

    def new_event(self) -> int | None:
        context = ctypes.c_void_p()
        if self._context(ctypes.byref(context)) != 0 or not context.value:
            return None  # no context yet: the script has not used the GPU
        event = ctypes.c_void_p()
        if self._create(ctypes.byref(event), 0) != 0:  # 0: default flags, timing on
            return None
        return event.value

    def record(self, event: int, stream: int) -> int:
        """``cuEventRecord``'s CUresult: 0 when recorded."""
        return int(self._record(event, stream))

    def done(self, event: int) -> bool:
        code = int(self._query(event))
        if code not in (0, NOT_READY):
            raise RuntimeError(f"cuEventQuery returned {code}")
        return code == 0

    def elapsed_ms(self, start: int, end: int) -> float:
        ms = ctypes.c_float()
        code = int(self._elapsed(ctypes.byref(ms), start, end))
        if code != 0:
            raise RuntimeError(f"cuEventElapsedTime returned {code}")
        return ms.value

    def synchronize(self) -> None:
        self._synchronize()


class DriverEventTimer:
    """A ``recorder.GpuTimer`` over driver events; ``fallback_stream`` names the stream of
    the latest capture outside PyTorch (0: none yet)."""

    def __init__(self, recorder: Recorder, driver: Driver,
                 fallback_stream: Callable[[], int] = lambda: 0) -> None:
        self._recorder = recorder
        self._driver = driver
        self._fallback = fallback_stream
        self._free: list[tuple[int, int]] = []
        self._pending: deque[tuple[int, int, Timed]] = deque()
        self._unrecorded: set[int] = set()  # end events the driver refused to record
        self.stepped_aside = False  # a profiler holds CUPTI: no CUDA call of graphdoctor's
        self.untimed = 0

    def start(self) -> TimerToken | None:
        if self._recorder.captures or self.stepped_aside or len(self._pending) >= MAX_PENDING:
            self.untimed += 1
            return None
        pair = self._free.pop() if self._free else self._new_pair()
        if pair is None:  # no context: the script has not used the GPU yet, nothing to time
            return None
        stream = current_stream(self._fallback)
        if stream is None:
            self._untimed(pair, counted=True)
            return None
        refused = self._driver.record(pair[0], stream)
        if refused:
            # a thread with no context current (CUPTI's, graphdoctor's own) launches no GPU
            # work of its own: nothing to time; any other refusal leaves a call untimed
            self._untimed(pair, counted=refused != INVALID_CONTEXT)
            return None
        return (pair[0], pair[1], None, stream)

    def _untimed(self, pair: tuple[int, int], counted: bool) -> None:
        self._free.append(pair)
        self.untimed += counted

    def stop(self, token: TimerToken, row: Timed) -> None:
        self.end(token)
        self.settle(token, row)

    def end(self, token: TimerToken) -> None:
        _, end, _, stream = token
        if self._driver.record(end, stream):
            self._unrecorded.add(end)  # its row goes out untimed, in settle

    def settle(self, token: TimerToken, row: Timed) -> None:
        start, end, _, _ = token
        if end in self._unrecorded:
            self._unrecorded.discard(end)
            self._free.append((start, end))
            self.untimed += 1
            self._recorder.emit(row)
            return
        self._pending.append((start, end, row))
        if len(self._pending) % RESOLVE_EVERY == 0:
            self.resolve()

    def release(self, token: TimerToken) -> None:
        self._free.append((token[0], token[1]))

    def forget(self, graph: int) -> None:
        """Nothing is kept per graph here."""

    def resolve(self, wait: bool = False) -> None:
        """Emit every finished pair's row, oldest first (``wait``: at the end of the run)."""
        if self._recorder.captures:
            return
        done: list[Timed] = []
        try:
            if wait and self._pending:
                self._driver.synchronize()
            pending, driver = self._pending, self._driver
            while pending and driver.done(pending[0][1]):
                start, end, row = pending.popleft()
                done.append(row._replace(gpu=int(driver.elapsed_ms(start, end) * 1e6)))
                self._free.append((start, end))
        except RuntimeError:  # a sticky CUDA error, or an event never recorded: emit untimed
            done += [row for _, _, row in self._pending]
            self._pending.clear()
        self._recorder.emit_many(done)

    def _new_pair(self) -> tuple[int, int] | None:
        start, end = self._driver.new_event(), self._driver.new_event()
        return (start, end) if start and end else None


def current_stream(fallback: Callable[[], int]) -> int | None:
    """The stream the script's framework launches on now (see the module's docstring);
    None where none is known (no framework to ask, no capture seen yet), or where asking
    fails: a call timed while a framework is still being imported finds it half made, and
    nothing here may raise into the script (it runs in its calls' sys.monitoring events)."""
    try:
        cupy = sys.modules.get("cupy")
        if cupy is not None:
            return int(cupy.cuda.get_current_stream().ptr)
        torch = sys.modules.get("torch")
        if torch is not None and torch.cuda.is_initialized():
            return int(torch.cuda.current_stream().cuda_stream)
    except Exception:  # noqa: BLE001 - half imported, or CUDA refusing: left untimed
        return None
    return fallback() or None
