"""GPU time of replays and calls, from CUDA events, without adding a host sync.

A pair of pooled events brackets the work on the current stream; the pair is read back
only once its end event has completed (``query()``, which does not block), in batches, and
never while any capture is under way: an event query during a global-mode capture would
invalidate the user's capture. At the end of the run one synchronize settles the rest.
Each pending pair carries the record it will complete with its GPU time.

A replay's pair is kept until its graph's next timed replay is read, and the GPU time from
the one's end event to the other's is written too (:class:`ReplaySpan`): over a run of
replays issued back to back, that span divided by the replays in it is the loop's pace on
the GPU, which a lone replay's pair cannot give (it holds the graph's launch latency, which
a loop hides).

While a profiler of the script's records (``torch.profiler`` and the like), the timer steps
aside: it records and reads no event, so the script's trace holds no CUDA call of
graphdoctor's, and the replays and calls of that time are counted untimed, with a note.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

import torch

from graphdoctor.record import compat
from graphdoctor.record.recorder import Recorder, TimerToken
from graphdoctor.trace.event_kinds import Replay, Timed
from graphdoctor.trace.spool.records import ReplaySpan

MAX_PENDING = 4096
WARM_PAIRS = 4  # event pairs made ready at each capture's end, for its first replays
RESOLVE_EVERY = 64
PROFILER_NOTE = ("a profiler of the script's was recording, so the replays and calls it saw were "
                 "not timed: its trace holds no CUDA event of graphdoctor's")


class EventTimer:
    """Only built once CUDA is initialized (so only on a CUDA build); ``recorder.timer``
    then (see ``recorder.GpuTimer``)."""

    def __init__(self, recorder: Recorder):
        self._record, self._query, self._elapsed = compat.unpatched_event_methods()
        self._recorder = recorder
        self._stream = compat.CurrentStream()
        self._free: list[tuple[Any, Any]] = []
        self._pending: deque[tuple[Any, Any, Timed]] = deque()
        self._last_replay: dict[int, tuple[Any, Any, Replay]] = {}  # graph -> its last read
        self._profiler_active = compat.ProfilerActive()
        self._stepped_aside = False
        self.untimed = 0

    def start(self) -> TimerToken | None:
        """Record a start event on the current stream; None when timing must be skipped."""
        if self._recorder.captures or len(self._pending) >= MAX_PENDING or self._profiling():
            self.untimed += 1
            return None
        try:
            stream, handle = self._stream()
            start, end = self._free.pop() if self._free else self._new_pair()
            self._record(start, stream)
        except RuntimeError:  # a thread CUDA refuses: the driver's, running a host callback
            self.untimed += 1
            return None
        return (start, end, stream, handle)

    def stop(self, token: TimerToken, row: Timed) -> None:
        """Record the end event; ``row`` is emitted once its GPU time is known."""
        self.end(token)
        self.settle(token, row)

    def end(self, token: TimerToken) -> None:
        """Record the end event now; the row that owns it comes later, through ``settle``
        (the eager history learns which function a call was only when it is claimed)."""
        _, end, stream, _ = token
        self._record(end, stream)

    def settle(self, token: TimerToken, row: Timed) -> None:
        """Emit ``row`` with the GPU time of a pair ``end`` already closed."""
        start, end, _, _ = token
        self._pending.append((start, end, row))
        if len(self._pending) % RESOLVE_EVERY == 0:
            self.resolve()

    def release(self, token: TimerToken) -> None:
        """A pair nobody will read (a kept call the eager history let go): it is reused."""
        start, end, _, _ = token
        self._free.append((start, end))

    def resolve(self, wait: bool = False) -> None:
        """Emit every finished pair's row, oldest first (``wait``: at the end of the run)."""
        if self._recorder.captures or (not wait and self._profiling()):
            return
        done: list[Any] = []
        try:
            if wait and self._pending:
                compat.synchronize_unpatched()  # not the patched one: not a user sync
            pending, query, elapsed = self._pending, self._query, self._elapsed
            while pending and query(pending[0][1]):
                start, end, row = pending.popleft()
                done.append(row._replace(gpu=int(elapsed(start, end) * 1e6)))
                if isinstance(row, Replay) and row.graph >= 0:  # a graph captured here
                    done += self._span(start, end, row)
                else:
                    self._free.append((start, end))
        except RuntimeError:  # a sticky CUDA error: nothing more can be read
            self.abandon()
        self._recorder.emit_many(done)

    def _span(self, start: Any, end: Any, row: Replay) -> list[ReplaySpan]:
        """The GPU time since the graph's last timed replay read (same stream only); this
        replay's pair kept in its place, the last one's reused."""
        last = self._last_replay.get(row.graph)
        self._last_replay[row.graph] = (start, end, row)
        if last is None:
            return []
        self._free.append((last[0], last[1]))
        if last[2].stream != row.stream:
            return []
        return [ReplaySpan(row.graph, last[2].t, row.t, int(self._elapsed(last[1], end) * 1e6))]

    def warm(self) -> None:
        """Have :data:`WARM_PAIRS` pairs of events made and ready, outside any replay: CUDA
        makes an event at its first record, and a graph's first replay, which a program
        racing two graphs launches the other one right after, should not pay for that."""
        if self._recorder.captures or len(self._free) >= WARM_PAIRS:
            return
        try:
            stream, _ = self._stream()
            for _ in range(WARM_PAIRS - len(self._free)):
                start, end = self._new_pair()
                self._record(start, stream)
                self._record(end, stream)
                self._free.append((start, end))
        except RuntimeError:  # a thread CUDA refuses: left to the first replay
            return

    def forget(self, graph: int) -> None:
        """``graph`` was deleted: the pair kept for its next span is reused."""
        last = self._last_replay.pop(graph, None)
        if last is not None:
            self._free.append((last[0], last[1]))

    def abandon(self) -> None:
        """Give up on pending pairs (the device is in a bad state); emit them untimed."""
        rows = [row for _, _, row in self._pending]
        self._pending.clear()
        self._last_replay.clear()
        self._recorder.emit_many(rows)

    def _profiling(self) -> bool:
        if self._recorder.profiling_itself:
            return True  # its events would land in graphdoctor's own profile
        if not self._profiler_active():
            return False
        if not self._stepped_aside:
            self._stepped_aside = True
            self._recorder.note("GPU times", PROFILER_NOTE)
        return True

    @staticmethod
    def _new_pair() -> tuple[Any, Any]:
        make_event: Callable[..., Any] = torch.cuda.Event  # its __new__ is unannotated
        return (make_event(enable_timing=True), make_event(enable_timing=True))
