"""Eager calls of what a capture outside PyTorch ran, timed as PyTorch's are.

A verdict compares a graph's replays with the same work run eagerly. For PyTorch's graphs
the graph source finds that work (the user functions the captured block called) and times
its eager calls; a graph CUPTI sees gets the same, from the same parts
(:mod:`graphdoctor.record.eager.calls`, :mod:`graphdoctor.record.eager.eager_history`):

- while a capture is open, the frame that began it is watched for the user functions it
  calls (``step(x)`` between ``stream.begin_capture()`` and ``end_capture()``), and the
  capture is registered on the recorder, so that nothing times a call or records an event
  inside it;
- at its end, those functions become the graph's callees, and their eager calls are timed
  from then on; the calls they made before (the warmup, an eager loop the script timed
  first) come from the eager history, which the layer installs from the start of the run
  when the script has no torch to install it;
- GPU time comes from driver events (:mod:`graphdoctor.record.device.driver_timer`), since torch's
  events may not exist.

Cost: timing a call cost a CuPy eager step of 10 small kernels about 35 µs of host time on
an H100, the median over 7 paired runs, noisy (two sys.monitoring events, a pair of driver
events and reading them back; bench/results/overhead-h100-2026-11-24-cupti-eager-every-
call.json). So each callee's first ``TIMED_CALLS`` calls after the capture are timed, as
the eager history times each function's first ones, and no more: a long eager loop pays
for those alone.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from types import CodeType, FrameType

from graphdoctor.record.device.driver_timer import CudaDriver, Driver, DriverEventTimer
from graphdoctor.record.eager import eager_history
from graphdoctor.record.eager.calls import (
    EAGER_TIMES_LOST,
    SCRIPT_TOOK_THE_ID,
    CallSiteWatcher,
    EagerCallTimer,
    Monitor,
    innermost_user_frame,
)
from graphdoctor.record.eager.kept_calls import TIMED_CALLS
from graphdoctor.record.recorder import CaptureState, GpuTimer, Recorder
from graphdoctor.trace.names import CALLEES_BASIS, CAPTURED_FUNCTION
from graphdoctor.trace.spool import records as sr


class CuptiEager:
    """The callees of captures outside PyTorch, and the timing of their eager calls."""

    def __init__(self, recorder: Recorder, fallback_stream: Callable[[], int],
                 driver: Driver | None = None,
                 timed_calls: int = TIMED_CALLS) -> None:
        self.recorder = recorder
        self.timer: DriverEventTimer | None = _driver_timer(recorder, fallback_stream, driver)
        self.monitor = Monitor(on_lost=lambda: recorder.note(EAGER_TIMES_LOST, SCRIPT_TOOK_THE_ID))
        self.call_sites = CallSiteWatcher(recorder, self.monitor)
        self.eager = EagerCallTimer(recorder, self.monitor, timer=self._timer,
                                    limit=timed_calls)
        self.watched: dict[int, CodeType | None] = {}  # graph id -> the code watched
        self._undo_history: Callable[[], None] | None = None

    def _timer(self) -> GpuTimer | None:
        return self.timer

    def install_history(self) -> None:
        """The eager history, from the start, unless switched off."""
        if "eager_history" not in self.recorder.config.off:
            self._undo_history = eager_history.install(self.recorder, self._timer)

    def begin(self, graph: int, stream: int, stack: int, api: str, frame: FrameType) -> None:
        """A capture opens on this thread, begun by ``frame``'s code."""
        self.recorder.captures[threading.get_ident()] = CaptureState(
            graph, stream, "", api, -1, stack=stack)
        user = innermost_user_frame(self.recorder, frame)
        self.watched[graph] = self.call_sites.start(user)

    def end(self, graph: int) -> tuple[list[int], str]:
        """The capture closes: its callees' function ids, and what the eager figures are."""
        state = self.recorder.captures.pop(threading.get_ident(), None)
        self.call_sites.stop(self.watched.pop(graph, None))
        if state is None or state.graph != graph:
            return [], ""
        ending = _running_now()
        callees = []
        for code in state.callees:
            if code in ending:  # still running: the call that ends the capture, not its work
                continue
            fn = self.recorder.code_function_id(code, CAPTURED_FUNCTION)
            self.eager.watch(code, fn, graph)
            callees.append(fn)
        return callees, CALLEES_BASIS if callees else ""

    def stop(self) -> None:
        """Read the last GPU times (one synchronize) and stop watching."""
        self.eager.close()
        if self._undo_history is not None:
            self._undo_history()
        self.monitor.release()
        if self.timer is not None:
            self.timer.resolve(wait=True)
            self.recorder.emit(sr.Untimed(self.timer.untimed))


def _running_now() -> set[CodeType]:
    """The code of every frame on this thread's stack (``stream.end_capture()`` among them,
    which the call-site watcher saw called while the capture was still open)."""
    running: set[CodeType] = set()
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        running.add(frame.f_code)
        frame = frame.f_back
    return running


def _driver_timer(recorder: Recorder, fallback_stream: Callable[[], int],
                  driver: Driver | None) -> DriverEventTimer | None:
    if "timing" in recorder.config.off:  # the part that switches GPU timers off
        return None
    try:
        driver = driver or CudaDriver()
    except (OSError, AttributeError) as error:  # no libcuda: host times only
        recorder.note(EAGER_TIMES_LOST, f"GPU time of eager calls needs libcuda ({error})")
        return None
    return DriverEventTimer(recorder, driver, fallback_stream)
