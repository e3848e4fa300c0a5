"""GPU time of each graph's kernels over one of its replays, from torch.profiler (``--full``).

A graph's anatomy says which kernels it holds; this says which of them its replays spend the
GPU's time in. The second replay of each graph (the first may carry one-time work) runs
inside a profiler that records CUDA activity only, and the kernels' times are summed by
kernel group. Starting a profiler costs tens of milliseconds and the profiled replay is
slower on the host, so only the full mode does it. A script whose own profiler is recording
keeps it to itself: graphdoctor profiles nothing then, and says so.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from graphdoctor.record import compat
from graphdoctor.record.recorder import Recorder
from graphdoctor.trace import anatomy
from graphdoctor.trace.spool import records as sr

WHAT = "kernel times"
PROFILED_REPLAY = 1  # replays of a graph before the one that is profiled
SCRIPT_PROFILES = "the script's own profiler was recording at the replay to profile"

Replay = Callable[[Any], Any]


class KernelTimer:
    def __init__(self, recorder: Recorder):
        self.rec = recorder
        self.profiler_active = compat.ProfilerActive()
        self._timed: set[int] = set()
        self._stepped_aside = False

    def replay_for(self, graph_id: int, replayed: int, original: Replay) -> Replay:
        """What to replay ``graph_id`` with, after ``replayed`` replays of it: ``original``,
        or once per graph, ``original`` under the profiler."""
        if replayed != PROFILED_REPLAY or graph_id in self._timed:
            return original
        self._timed.add(graph_id)
        return lambda graph: self._profiled(original, graph, graph_id)

    def _profiled(self, original: Replay, graph: Any, graph_id: int) -> Any:
        if self.profiler_active():
            if not self._stepped_aside:
                self._stepped_aside = True
                self.rec.note(WHAT, SCRIPT_PROFILES)
            return original(graph)
        from torch.profiler import ProfilerActivity, profile  # full mode only

        self.rec.profiling_itself = True
        try:
            with profile(activities=[ProfilerActivity.CUDA]) as profiler:
                result = original(graph)
                compat.synchronize_unpatched()
        finally:
            self.rec.profiling_itself = False
        self._emit(graph_id, profiler.events())
        return result

    def _emit(self, graph_id: int, events: Any) -> None:
        times: dict[str, int] = {}
        for event in events or ():
            if str(getattr(event, "device_type", "")).endswith("CUDA"):
                name = anatomy.group_name(str(event.name))
                times[name] = times.get(name, 0) + _device_ns(event)
        self.rec.emit(sr.KernelTimes(graph_id, self.rec.now(), times, sum(times.values())))


def _device_ns(event: Any) -> int:
    """An event's GPU time in ns (torch names it device_time, and cuda_time before 2.4)."""
    micros = getattr(event, "device_time", None)
    if micros is None:
        micros = getattr(event, "cuda_time", 0)
    return int(float(micros or 0) * 1000)
