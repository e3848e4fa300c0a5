"""A compiled function's calls under CUDAGraph Trees, kept at the least cost per call.

A serving loop calls its compiled step thousands of times a second, each call a replay of
the step's graph wrapped in the tree's Python (60 µs for a small step). Writing a row per
call (encoded and written to the spool under its lock) and timing a sample of them on the
GPU made such a loop up to twice as slow. So, as the replay path does for replays
(:mod:`graphdoctor.record.capture.replay_path`), a function's calls take a fast lane once its first
ones are timed: one clock read says whether a timed sample is due; if not, the call runs,
and if it replayed its graph (the steady state), its start and end go into the function's
:class:`CallLog`. A call that did anything else (warmed up, recorded, ran eagerly, raised)
is written as a row of its own, as before. Logged calls are written as
:class:`~graphdoctor.trace.spool.records.CallRun` records twice a second from the spool's
flushing thread and at the end, which assembly turns back into one call each.
"""

from __future__ import annotations

import operator
import threading
from typing import Any

from graphdoctor.record.recorder import CompiledCall, Recorder
from graphdoctor.trace.spool.records import REPLAY_RUN_MAX, CallRun


class CallLog:
    """One compiled function's fast lane: when its next timed call is due (perf_counter
    ns), the thread that calls it, the call object reused for each call, and the start and
    end of each logged call not yet written (start, end, start, end...). Only ``owner``
    appends; a writer takes whole pairs from the front, under the lane's lock."""

    __slots__ = ("fn", "owner", "due", "call", "times")

    def __init__(self, fn: int, compile_id: str, owner: int, due: int):
        self.fn, self.owner, self.due = fn, owner, due
        self.call = CompiledCall(fn, compile_id)
        self.times: list[int] = []

    def take(self) -> tuple[list[int], list[int]]:
        n = len(self.times) // 2 * 2
        taken = self.times[:n]
        del self.times[:n]
        starts = taken[0::2]
        return starts, list(map(operator.sub, taken[1::2], starts))


class CallLane:
    """Every compiled function's :class:`CallLog`, and their writing."""

    def __init__(self, recorder: Recorder):
        self.rec = recorder
        self.logs: dict[int, CallLog] = {}  # function id -> its lane
        self._writing = threading.Lock()  # one writer at a time takes from the logs

    def open(self, fn: int, compile_id: str, due: int) -> None:
        """Calls of ``fn`` on this thread take the fast lane from now on, until ``due``."""
        if fn not in self.logs:
            self.logs[fn] = CallLog(fn, compile_id, threading.get_ident(), due)

    def timed(self, fn: int, due: int) -> None:
        """A call of ``fn`` was timed: its lane waits until ``due`` for the next."""
        log = self.logs.get(fn)
        if log is not None:
            log.due = due

    def flush(self) -> None:
        """Write what every log holds (from any thread, each call once)."""
        with self._writing:
            taken = [(log, *log.take()) for log in list(self.logs.values())]
        records = [record for log, starts, durs in taken if starts
                   for record in self._runs(log, starts, durs)]
        if records:
            self.rec.emit_many(records)

    def _runs(self, log: CallLog, starts: list[int], durs: list[int]) -> list[CallRun]:
        thread, t0 = self.rec.thread_of(log.owner), self.rec.t0
        runs = []
        for i in range(0, len(starts), REPLAY_RUN_MAX):
            chunk = starts[i:i + REPLAY_RUN_MAX]
            gaps = [0, *map(operator.sub, chunk[1:], chunk)]
            runs.append(CallRun(log.fn, thread, chunk[0] - t0, gaps, durs[i:i + REPLAY_RUN_MAX]))
        return runs

    def heartbeat(self) -> None:
        self.flush()

    def finish(self) -> None:
        for log in self.logs.values():
            log.due = 0  # a call still under way goes the general way
        self.flush()


def reset(call: CompiledCall) -> Any:
    """``call`` made ready for the next call of its function (the fast lane reuses one)."""
    call.captured = call.replayed = False
    return call
