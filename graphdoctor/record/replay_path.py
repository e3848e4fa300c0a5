"""The replay path: what one ``CUDAGraph.replay()`` costs the script, kept to the least.

CUDA graphs matter most where the host is the bottleneck, a small graph replayed in a tight
loop, and a plain replay of a one-kernel graph takes about 3 µs of host time there. The GPU
time of a replay is taken for a sample (:mod:`graphdoctor.record.gpu_sample`); medians of
replay GPU time rest on it, and what each replay took on the host is kept for every one.

The other replays are counted and their start and host time put in a queue, nothing more;
the queue is written as :class:`~graphdoctor.trace.spool.records.ReplayRun` records at the
replays sampled anyway (the 1st, 2nd, 4th... of a graph, and at least every 100 ms), when
it holds :data:`REPLAY_RUN_MAX`, twice a second from the spool's flushing thread, and at the
end. A crash loses at most half a second of them; the replay counts, written twice a second
as ever, survive. The stream of an untimed replay is taken to be that of its graph's last
timed one (reading the current stream costs as much as the replay), and it gets an NVTX range
only where a tool listens (:mod:`graphdoctor.record.nvtx_ranges`).
"""

from __future__ import annotations

import functools
import operator
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from types import FrameType
from typing import Any, Protocol

from graphdoctor.record import gpu_sample, inputs
from graphdoctor.record.errors import record_exception
from graphdoctor.record.gpu_sample import TIMED_FIRST, sampled_note
from graphdoctor.record.recorder import Recorder
from graphdoctor.trace.event_kinds import NONE, Replay
from graphdoctor.trace.names import AT_REPLAY, SAMPLE_EVERY_NS
from graphdoctor.trace.spool.records import REPLAY_RUN_MAX, ReplayRun

STEP_LOOKUPS = 3  # replays of each graph after which its step function is no longer looked for
Pending = tuple[int, int, int, int]  # perf_counter ns at its start, host ns, graph, thread


class ReplayHooks(Protocol):
    """What the replay path asks of the graphs source."""

    watched: dict[int, inputs.GraphInputs]
    kernel_timer: Any  # --full's KernelTimer, or None
    last_sample_ns: int  # perf_counter ns of the last sampled replay of any graph

    def sampled(self, graph: int, count: int, caller: FrameType) -> None:
        """``graph``'s ``count``-th replay is one sampled (memory, frozen values)."""
        ...


class ReplayPath:
    """The wrapper of ``CUDAGraph.replay`` and its queue of untimed replays."""

    def __init__(self, recorder: Recorder, hooks: ReplayHooks, id_attr: str):
        self.rec, self.hooks, self.id_attr = recorder, hooks, id_attr
        self.pending: deque[Pending] = deque()  # appended by replaying threads, taken by any
        self.last_timed: dict[int, int] = {}  # graph -> perf_counter ns of its last timed one
        self.streams: dict[int, int] = {}  # graph -> stream of its last timed replay
        self.sampled_out = 0

    def wrap(self, original: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """The hot path: locals bound once, one function, no call but the replay's on the
        way of an untimed replay (a loop of tiny graphs pays every line of it)."""
        rec, hooks, counts, last_timed = self.rec, self.hooks, self.rec.replays, self.last_timed
        now, pending, ident, ranges = time.perf_counter_ns, self.pending, threading.get_ident, \
            rec.nvtx
        id_attr, watched_inputs, timed = self.id_attr, hooks.watched, self._timed
        gap = gpu_sample.TIMED_GAP_NS

        @functools.wraps(original)
        def replay(graph: Any) -> Any:
            if not rec.enabled or rec.timer is None:
                return original(graph)
            gid = graph.__dict__.get(id_attr, NONE)
            if rec.compiled_call:
                _mark_replayed(rec)
            watched = watched_inputs.get(gid)
            if watched is not None:
                inputs.before_replay(rec, watched)
            count = counts.get(gid, 0) + 1
            t0 = now()
            if count <= TIMED_FIRST or t0 - last_timed.get(gid, 0) >= gap \
                    or hooks.kernel_timer is not None:
                return timed(original, graph, gid, count)
            listened = ranges.listened
            if listened:
                ranges.push_replay(gid)
            try:
                original(graph)
            except BaseException as error:
                record_exception(rec, error, AT_REPLAY, gid)
                raise
            finally:
                if listened:
                    ranges.pop()
            t1 = now()
            pending.append((t0, t1 - t0, gid, ident()))
            counts[gid] = count
            if not count & (count - 1) or t1 - hooks.last_sample_ns > SAMPLE_EVERY_NS:
                self.flush()
                hooks.sampled(gid, count, sys._getframe(1))
            elif len(pending) >= REPLAY_RUN_MAX:
                self.flush()
            return None

        return replay

    def _timed(self, original: Callable[[Any], Any], graph: Any, gid: int, count: int) -> Any:
        """A replay timed on the GPU: a pair of CUDA events around it (and, with --full, its
        kernels), its row written once the events have completed."""
        rec, timer, kernel_timer = self.rec, self.rec.timer, self.hooks.kernel_timer
        assert timer is not None
        run = original if kernel_timer is None else kernel_timer.replay_for(
            gid, count - 1, original)
        rec.nvtx.push_replay(gid)
        t0 = time.perf_counter_ns()
        token = timer.start()
        try:
            run(graph)
        except BaseException as error:
            record_exception(rec, error, AT_REPLAY, gid)
            raise
        finally:
            rec.nvtx.pop()
        t1 = time.perf_counter_ns()
        stream = token[3] if token else self.streams.get(gid, 0)
        row = Replay(t0 - rec.t0, t1 - t0, NONE, gid, stream, rec.thread())
        if token is None:  # the timer declined (a capture, a profiler): not again at once
            rec.emit(row)
        else:
            timer.stop(token, row)
            self.streams[gid] = stream
        self.last_timed[gid] = t0
        self._counted(gid, count, t1)
        return None

    def _counted(self, gid: int, count: int, t1: int) -> None:
        self.rec.replays[gid] = count
        if count <= STEP_LOOKUPS and self.rec.history is not None:
            self.rec.history.replaying(gid)
        # samples at the 1st, 2nd, 4th, 8th... replay of each graph, and at least every
        # 100 ms: enough to see memory grow across replays, at a few samples per run
        if not count & (count - 1) or t1 - self.hooks.last_sample_ns > SAMPLE_EVERY_NS:
            self.flush()
            self.hooks.sampled(gid, count, sys._getframe(3))

    def flush(self) -> None:
        """Write the queued replays, one record per graph and thread (from any thread:
        each is taken from the queue once). Columns are cut out at C speed (``zip``): at a
        million replays a second, this is what the queue costs."""
        taken = self._take()
        if not taken:
            return
        self.sampled_out += len(taken)
        first = taken[0]
        if len({(graph, thread) for _, _, graph, thread in taken}) == 1:  # the usual case
            records = self._runs(first[2], first[3], [row[0] for row in taken],
                                 [row[1] for row in taken])
        else:
            records = [record for (graph, thread), rows in _by_graph_and_thread(taken).items()
                       for record in self._runs(graph, thread, [row[0] for row in rows],
                                                [row[1] for row in rows])]
        self.rec.emit_many(records)

    def _take(self) -> list[Pending]:
        """What the queue holds now; another thread may be taking from it too, so it may
        run out first (and what was taken must not be dropped then)."""
        taken: list[Pending] = []
        pending = self.pending
        try:  # extend keeps what it appended before the queue ran out
            taken.extend(pending.popleft() for _ in range(len(pending)))
        except IndexError:
            pass
        return taken

    def _runs(self, graph: int, ident: int, starts: list[int],
              durs: list[int]) -> list[ReplayRun]:
        thread, stream = self.rec.thread_of(ident), self.streams.get(graph, 0)
        runs = []
        for i in range(0, len(starts), REPLAY_RUN_MAX):
            chunk = starts[i:i + REPLAY_RUN_MAX]
            gaps = [0, *map(operator.sub, chunk[1:], chunk)]
            runs.append(ReplayRun(graph, thread, stream, chunk[0] - self.rec.t0, gaps,
                                  durs[i:i + REPLAY_RUN_MAX]))
        return runs

    def heartbeat(self) -> None:
        """Twice a second, from the spool's flushing thread: what a crash must not lose."""
        self.flush()

    def finish(self) -> None:
        """The recording ends: the queue written, and how GPU times were sampled said."""
        self.flush()
        if self.sampled_out:
            self.rec.note("replay GPU times", sampled_note("replays"))


def _by_graph_and_thread(taken: list[Pending]) -> dict[tuple[int, int], list[tuple[int, int]]]:
    rows: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for start, dur, graph, thread in taken:
        rows.setdefault((graph, thread), []).append((start, dur))
    return rows


def _mark_replayed(rec: Recorder) -> None:
    """A compiled function's call in progress on this thread replayed its graph."""
    call = rec.compiled_call.get(threading.get_ident())
    if call is not None:
        call.replayed = True
