"""The replay path: what one ``CUDAGraph.replay()`` costs the script, kept to the least.

CUDA graphs matter most where the host is the bottleneck, a small graph replayed in a tight
loop, and a plain replay of a one-kernel graph takes 3-5 µs of host time there. The GPU
time of a replay is taken for a sample (:mod:`graphdoctor.record.device.gpu_sample`); medians of
replay GPU time rest on it, and what each replay took on the host is kept for every one.

Two lanes. The **fast lane** takes a graph's replays once its first ones are timed, on the
thread that replays it, while no tool listens for NVTX ranges: one clock read says whether a
timed sample is due; if not, the replay runs and its start and end go into the graph's
:class:`GraphLog`. Nothing else: no object made, no count kept (a count is the replays
written plus those the log holds); in a compiled function's call (CUDAGraph Trees replaying
its graph), the call is marked as one that replayed.

The **general lane** takes the rest: each graph's first replays, the timed sample due once a
millisecond, replays from other threads. Everything periodic is
settled there, so at least once a millisecond for a graph that keeps replaying: captured
inputs checked (as many as the replays since the last look call for), memory and frozen
values sampled where the count passed a power of two or 100 ms went by, logs written. Its
untimed replays go into a queue of (start, host time, graph, thread).

Both are written as :class:`~graphdoctor.trace.spool.records.ReplayRun` records at the
replays sampled anyway, when a log (at its graph's next timed replay) or the queue holds
:data:`REPLAY_RUN_MAX`, twice a second
from the spool's flushing thread, and at the end. A crash loses at most half a second of
them; the replay counts, written twice a second as ever, survive. The stream of an untimed
replay is taken to be that of its graph's last timed one (reading the current stream costs
as much as the replay), and it gets an NVTX range only where a tool listens
(:mod:`graphdoctor.record.device.nvtx_ranges`).
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

from graphdoctor.record.capture import inputs
from graphdoctor.record.device import gpu_sample
from graphdoctor.record.device.gpu_sample import TIMED_FIRST, sampled_note
from graphdoctor.record.errors import record_exception
from graphdoctor.record.recorder import Recorder
from graphdoctor.trace.event_kinds import HOST_NOT_TIMED, NONE, Replay, ReplaySite
from graphdoctor.trace.names import AT_REPLAY, SAMPLE_EVERY_NS
from graphdoctor.trace.spool.records import REPLAY_RUN_MAX, ReplayRun

STEP_LOOKUPS = 3  # replays of each graph after which its step function is no longer looked for
SITE_FRAMES = 12  # frames kept of where a replay of a shared-pool graph was made
Pending = tuple[int, int, int, int]  # perf_counter ns at its start, host ns, graph, thread
LOG_ATTR = "_graphdoctor_log"  # a graph's GraphLog, once its replays may take the fast lane


class GraphLog:
    """One graph's fast lane: when its next timed sample is due, the thread that replays it,
    the start and end of each fast-lane replay not yet written (``times``: start, end, start,
    end...), and ``count``, its replays outside that list. Only ``owner`` appends; a writer
    takes from the front, under the path's lock, the whole pairs it holds, so a replay
    half-logged stays whole. A list, not an ``array``: its append is a third cheaper, and
    what it holds is written at least every :data:`REPLAY_RUN_MAX` replays or so."""

    __slots__ = ("graph", "count", "due", "owner", "times")

    def __init__(self, graph: int, count: int, due: int, owner: int):
        self.graph, self.count, self.due, self.owner = graph, count, due, owner
        self.times: list[int] = []

    def held(self) -> int:
        """Replays the list holds whole."""
        return len(self.times) // 2

    def replays(self) -> int:
        return self.count + self.held()

    def take(self) -> tuple[list[int], list[int]]:
        n = 2 * self.held()
        taken = self.times[:n]
        del self.times[:n]
        self.count += n // 2
        starts = taken[0::2]
        return starts, list(map(operator.sub, taken[1::2], starts))


class ReplayHooks(Protocol):
    """What the replay path asks of the graphs source."""

    watched: dict[int, inputs.GraphInputs]
    shared_pool: set[int]  # graphs whose memory pool another graph shares
    kernel_timer: Any  # --full's KernelTimer, or None
    last_sample_ns: int  # perf_counter ns of the last sampled replay of any graph

    def sampled(self, graph: int, count: int, caller: FrameType) -> None:
        """``graph``'s ``count``-th replay is one sampled (memory, frozen values)."""
        ...


class ReplayPath:
    """The wrapper of ``CUDAGraph.replay``, its graphs' logs and its queue of untimed
    replays."""

    def __init__(self, recorder: Recorder, hooks: ReplayHooks, id_attr: str):
        self.rec, self.hooks, self.id_attr = recorder, hooks, id_attr
        self.pending: deque[Pending] = deque()  # appended by replaying threads, taken by any
        # graph -> (perf_counter ns of its last timed one, its count then)
        self.last_timed: dict[int, tuple[int, int]] = {}
        self.due: dict[int, int] = {}  # graph -> perf_counter ns its next may be timed
        self.last_seen: dict[int, int] = {}  # graph -> its count at its last general replay
        self.streams: dict[int, int] = {}  # graph -> stream of its last timed replay
        self.logs: dict[int, GraphLog] = {}  # graph -> its fast lane's log
        self.sampled_out = 0
        # replays of shared-pool graphs and their callers' frames, as text, written from the
        # flushing thread: a program that races two replays relies on the second being
        # launched while the first still runs, so the replay itself takes nothing
        self.sites: deque[tuple[Replay, list[tuple[str, int, str]]]] = deque()
        self.finished = False  # the recording ended: replays from then on are the script's
        self._writing = threading.Lock()  # one writer at a time takes from the logs

    def wrap(self, original: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """The hot path: locals bound once, one function; a fast-lane replay pays two clock
        reads, two appends and five tests (a loop of tiny graphs pays every line of it)."""
        rec, compiled_call, now, ident = self.rec, self.rec.compiled_call, \
            time.perf_counter_ns, threading.get_ident
        general = self._general(original)

        @functools.wraps(original)
        def replay(graph: Any) -> Any:
            log = graph.__dict__.get(LOG_ATTR)
            if log is None or ident() != log.owner:
                return general(graph)
            t0 = now()
            if t0 >= log.due:
                return general(graph)
            try:
                original(graph)
            except BaseException as error:
                record_exception(rec, error, AT_REPLAY, log.graph)
                raise
            times = log.times
            times.append(t0)
            times.append(now())
            if compiled_call:
                _mark_replayed(rec)
            return None

        return replay

    def _general(self, original: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """The general lane: every replay the fast lane does not take."""
        rec, hooks, due = self.rec, self.hooks, self.due
        now, pending, ident, ranges = time.perf_counter_ns, self.pending, threading.get_ident, \
            rec.nvtx
        id_attr, timed, settle = self.id_attr, self._timed, self._settle

        def general(graph: Any) -> Any:
            if not rec.enabled or rec.timer is None or self.finished:
                return original(graph)
            gid = graph.__dict__.get(id_attr, NONE)
            if rec.compiled_call:
                _mark_replayed(rec)
            count = self._replays(graph, gid) + 1
            t0 = now()
            if count <= TIMED_FIRST or t0 >= due.get(gid, 0) or hooks.kernel_timer is not None:
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
            settle(graph, gid, count, t1, 3)
            if len(pending) >= REPLAY_RUN_MAX:
                self.flush()
            return None

        return general

    def _replays(self, graph: Any, gid: int) -> int:
        """``graph``'s replays so far, the fast lane's included."""
        log = graph.__dict__.get(LOG_ATTR)
        if log is None:
            return self.rec.replays.get(gid, 0)
        with self._writing:  # not while a writer moves replays from the arrays to the count
            return int(log.replays())

    def _timed(self, original: Callable[[Any], Any], graph: Any, gid: int, count: int) -> Any:
        """A replay timed on the GPU: a pair of CUDA events around it, its row written once
        the events have completed. The one replay --full runs under the profiler for its
        kernels is not timed: the profiler's start and its reading of the events (seconds,
        on the first) would be in its times."""
        rec, timer, kernel_timer = self.rec, self.rec.timer, self.hooks.kernel_timer
        assert timer is not None
        run = original if kernel_timer is None else kernel_timer.replay_for(
            gid, count - 1, original)
        profiled = run is not original
        rec.nvtx.push_replay(gid)
        t0 = time.perf_counter_ns()
        token = None if profiled else timer.start()
        try:
            run(graph)
        except BaseException as error:
            record_exception(rec, error, AT_REPLAY, gid)
            raise
        finally:
            rec.nvtx.pop()
        t1 = time.perf_counter_ns()
        stream = token[3] if token else self.streams.get(gid, 0)
        row = Replay(t0 - rec.t0, HOST_NOT_TIMED if profiled else t1 - t0, NONE, gid, stream,
                     rec.thread())
        if token is None:  # the timer declined (a capture, a profiler): not again at once
            rec.emit(row)
        else:
            timer.stop(token, row)
            self.streams[gid] = stream
            if gid in self.hooks.shared_pool:  # where, and on which stream (GD309 asks)
                self.sites.append((row, inputs.frames_of(sys._getframe(3), SITE_FRAMES)))
        previous, previous_count = self.last_timed.get(gid, (0, 0))
        self.last_timed[gid] = (t0, count)
        self.due[gid] = gpu_sample.next_due(t0, previous, count - previous_count)
        self._hand_over(graph)
        if count <= STEP_LOOKUPS and rec.history is not None:
            rec.history.replaying(gid)
        self._settle(graph, gid, count, t1, 4)
        return None

    def _hand_over(self, graph: Any) -> None:
        """A timed replay from a thread other than the fast lane's owner: the lane moves to
        it (a graph warmed up on one thread and served from another), what the last owner
        logged written first, under its thread. Only at timed replays, so at most once a
        millisecond where two threads take turns."""
        log = graph.__dict__.get(LOG_ATTR)
        if log is not None and log.owner != threading.get_ident():
            self.flush()
            log.owner = threading.get_ident()

    def _settle(self, graph: Any, gid: int, count: int, t1: int, depth: int) -> None:
        """:meth:`_settled`, whose failure (a bug of graphdoctor's) never reaches the
        script's replay: the replay has run, and only graphdoctor's bookkeeping is lost."""
        try:
            self._settled(graph, gid, count, t1, depth + 1)
        except Exception:  # noqa: BLE001 - the script's replay ran; its count is what is lost
            self.rec.replays[gid] = count

    def _settled(self, graph: Any, gid: int, count: int, t1: int, depth: int) -> None:
        """After each general-lane replay, ``graph``'s ``count``-th: its count, its log (its
        fast lane opened once its first replays are timed, except under --full, which times
        every replay's kernels, or while a tool listens for NVTX ranges), its inputs, and a
        sample where the count passed a power of two (the 1st, 2nd, 4th... replay: enough to
        see memory grow across replays, at a few samples per run) or 100 ms went by.
        ``depth``: how far up the stack the script's replaying frame is."""
        self.rec.replays[gid] = count
        log = graph.__dict__.get(LOG_ATTR)
        due = self.due.get(gid, 0)
        if log is not None:
            log.count, log.due = log.count + 1, due
            if log.held() >= REPLAY_RUN_MAX:  # what a loop of microsecond replays logs
                self.flush()
        elif count >= TIMED_FIRST and gid != NONE and self.hooks.kernel_timer is None \
                and not self.rec.nvtx.listened:
            log = GraphLog(gid, count, due, threading.get_ident())
            graph.__dict__[LOG_ATTR] = self.logs[gid] = log
        seen, self.last_seen[gid] = self.last_seen.get(gid, 0), count
        watched = self.hooks.watched.get(gid)
        if watched is not None:
            inputs.check_at_replay(self.rec, watched, count, sys._getframe(depth))
        # sampled from a graph's 2nd replay on (the 2nd, 4th, 8th...): its 1st is the one a
        # program that races two graphs launches the other one right after
        if count > 1 and (count.bit_length() > seen.bit_length()
                          or t1 - self.hooks.last_sample_ns > SAMPLE_EVERY_NS):
            self.hooks.sampled(gid, count, sys._getframe(depth))

    def flush(self) -> None:
        """Write the queued and logged replays, one record per graph and thread (from any
        thread: each is taken once). Columns are cut out at C speed (``zip``, arrays): at a
        million replays a second, this is what keeping them costs. The counts the fast lane
        kept go to the recorder's too."""
        with self._writing:
            taken = self._take()
            logged = [(log, *log.take()) for log in list(self.logs.values())]
        records = self._queued_runs(taken)
        for log, starts, durs in logged:
            self.rec.replays[log.graph] = max(self.rec.replays.get(log.graph, 0), log.count)
            if starts:
                self.sampled_out += len(starts)
                records += self._runs(log.graph, log.owner, starts, durs)
        if records:
            self.rec.emit_many(records)

    def _queued_runs(self, taken: list[Pending]) -> list[ReplayRun]:
        if not taken:
            return []
        self.sampled_out += len(taken)
        first = taken[0]
        if len({(graph, thread) for _, _, graph, thread in taken}) == 1:  # the usual case
            return self._runs(first[2], first[3], [row[0] for row in taken],
                              [row[1] for row in taken])
        return [record for (graph, thread), rows in _by_graph_and_thread(taken).items()
                for record in self._runs(graph, thread, [row[0] for row in rows],
                                         [row[1] for row in rows])]

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

    def forget(self, graph: Any) -> None:
        """``graph`` is captured again: what its fast lane logged written, the lane closed."""
        log = graph.__dict__.pop(LOG_ATTR, None)
        if log is not None:
            self.flush()
            self.logs.pop(log.graph, None)

    def deleted(self, graph: int) -> None:
        """``graph`` is gone: its lane written and closed, nothing of it kept."""
        log = self.logs.pop(graph, None)
        if log is not None:
            log.due = 0
            self.flush()
        for kept in (self.last_timed, self.due, self.last_seen, self.streams):
            kept.pop(graph, None)
        forget = getattr(self.rec.timer, "forget", None)
        if forget is not None:
            forget(graph)

    def heartbeat(self) -> None:
        """Twice a second, from the spool's flushing thread: what a crash must not lose."""
        self.flush()
        self.write_sites()

    def write_sites(self) -> None:
        """The replay sites noted since the last beat, each with its stack."""
        rec = self.rec
        while self.sites:
            row, frames = self.sites.popleft()
            rec.emit(ReplaySite(row.t, row.graph, row.stream, row.thread,
                                rec.stacks.from_named(frames)))

    def finish(self) -> None:
        """The recording ends: every fast lane closed (a replay method the script still holds
        goes the general way, which leaves a finished recording alone: nothing piles up in a
        log no one writes), the queue and logs written, and how GPU times were sampled said."""
        self.finished = True
        for log in list(self.logs.values()):
            log.due = 0
        self.flush()
        self.write_sites()
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
