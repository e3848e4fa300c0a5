"""Allocations, from the caching allocator, and allocator totals over time.

The default mode never turns the allocator's history on: a history entry costs microseconds
to read back and write, which a capture of a few hundred ops would feel several milliseconds
of. What a capture allocated is read once it ends instead, from the allocator itself: the
graph's own pool (its segments, which size it, and its blocks still in use, the capture's
outputs), in a snapshot of that pool alone, and the allocator's counters on every device (a
capture that allocated on another device did work it cannot record). A capture that
allocated nothing takes no snapshot at all. These allocations are placed at the capture's
own line. ``--full`` keeps the history on for the whole run, with a Python stack per
allocation, drained into the spool at each capture boundary and about once a second; each
allocation's pool is found by joining its address to the snapshot's segments
(``segment_pool_id`` is (0, 0) for the default pool, a graph's private pool otherwise).
"""

from __future__ import annotations

import bisect
import time
from typing import Any

from graphdoctor.record import compat
from graphdoctor.record.recorder import Recorder
from graphdoctor.trace import spool_records as sr

DRAIN_EVERY_NS = 1_000_000_000
ACTIONS = frozenset({"alloc", "free_requested", "free_completed", "segment_alloc",
                     "segment_free"})


class AllocatorWatch:
    """The allocator's totals at each capture boundary and sampled replay, what each capture
    allocated, and --full's history. One per recording: session puts it on the recorder
    (``recorder.memory``, which the capture source calls, whether or not the "memory" part
    is switched off) and installs it as the "memory" source, which turns --full's history on.
    """

    def __init__(self, recorder: Recorder):
        self._rec = recorder
        self._history_on = False  # --full's allocator history: on for the whole run, with stacks
        self._last_drain = 0
        self._before: dict[int, compat.AllocatorTotals] = {}  # graph -> totals as it began

    def install(self, recorder: Recorder) -> None:
        if recorder.config.mode != "full":
            return None
        if not compat.lazy_cuda_call(self._turn_on):
            recorder.note("allocations outside captures", "torch.cuda._lazy_call is missing")
        return None

    def _turn_on(self) -> None:
        self._history_on = compat.memory_history(
            True, stacks=True, max_entries=self._rec.config.max_memory_entries)
        if not self._history_on:
            self._rec.note("allocations",
                           "torch.cuda.memory._record_memory_history is unavailable")

    def capture_starting(self, graph: int) -> None:
        """Sample the totals (kept, to see what the capture allocated); drain --full's history."""
        self._before[graph] = self._record_totals(graph)
        if self._history_on:
            self.drain()

    def capture_ended(self, graph: int, device: int, pool: tuple[int, int] | None,
                      stack: int) -> int:
        """Record what the capture allocated; return the bytes the graph's pool reserves."""
        recorder = self._rec
        before = self._before.pop(graph, compat.AllocatorTotals(0, 0))
        after = self._record_totals(graph)
        t = recorder.now()
        if self._history_on:
            snapshot = self.drain(graph)
        elif not recorder.config.allocations or before.made == after.made:
            return 0
        else:
            snapshot = compat.memory_snapshot(pool, traces=False) if pool else None
            recorder.emit_many(_capture_allocations(t, graph, device, before, after, snapshot,
                                                    stack))
        if snapshot is None or pool is None:
            return 0
        return sum(int(s.get("total_size", 0)) for s in snapshot.get("segments", [])
                   if tuple(s.get("segment_pool_id", ())) == pool)

    def sample(self, graph: int) -> None:
        """Record the allocator's totals now (and drain --full's history once a second)."""
        self._record_totals(graph)
        self._maybe_drain()

    def finish(self) -> None:
        self.drain()
        if self._history_on:
            compat.memory_history(False, stacks=False, max_entries=0)
            self._history_on = False

    def _maybe_drain(self) -> None:
        now = time.perf_counter_ns()
        if self._history_on and now - self._last_drain > DRAIN_EVERY_NS:
            self.drain()

    def drain(self, capture_graph: int = -1) -> dict[str, Any] | None:
        """Move --full's allocator history into the spool and clear it; return the snapshot."""
        if not self._history_on:
            return None
        self._last_drain = time.perf_counter_ns()
        snapshot = compat.memory_snapshot()
        if snapshot is None:
            return None
        recorder = self._rec
        compat.memory_history(True, stacks=True, max_entries=recorder.config.max_memory_entries,
                              clear=True)
        pools = _SegmentPools(snapshot.get("segments", []))
        records = [_record(recorder, entry, pools, capture_graph, device)
                   for device, trace in enumerate(snapshot.get("device_traces", []))
                   for entry in trace if entry.get("action", "") in ACTIONS]
        recorder.emit_many(records)
        return snapshot

    def _record_totals(self, graph: int) -> compat.AllocatorTotals:
        recorder = self._rec
        totals = compat.allocator_totals()
        recorder.emit(sr.MemoryRecord(recorder.now(), totals.allocated, totals.reserved, graph))
        return totals


def _capture_allocations(t: int, graph: int, device: int, before: compat.AllocatorTotals,
                         after: compat.AllocatorTotals, snapshot: dict[str, Any] | None,
                         stack: int) -> list[sr.AllocRecord]:
    """The blocks of the graph's pool still in use, and what other devices allocated."""
    records = [sr.AllocRecord(t, "alloc", int(block.get("address", 0)), int(block.get("size", 0)),
                int(segment.get("stream", 0)), _pool_name(segment.get("segment_pool_id")),
                graph, stack, device)
               for segment in (snapshot or {}).get("segments", [])
               for block in segment.get("blocks", []) if block.get("state") == "active_allocated"]
    for other, (made, was) in enumerate(zip(after.made, before.made)):
        if other != device and made != was:
            records.append(sr.AllocRecord(t, "alloc", 0, made[1] - was[1], 0, "default", graph,
                            stack, other))
    return records


def _record(recorder: Recorder, entry: dict[str, Any], pools: _SegmentPools,
            capture_graph: int, device: int) -> sr.AllocRecord:
    addr = int(entry.get("addr", 0))
    frames = entry.get("frames")
    stack = recorder.stacks.from_named(
        [(f.get("filename", "?"), int(f.get("line", 0)), f.get("name", "?")) for f in frames]
    ) if frames else -1
    return sr.AllocRecord(recorder.from_unix_us(entry.get("time_us", 0)), entry["action"], addr,
            int(entry.get("size", 0)), int(entry.get("stream", 0)), pools.pool_of(addr),
            capture_graph, stack, device)


class _SegmentPools:
    """Address -> pool id, from the snapshot's segments."""

    def __init__(self, segments: list[dict[str, Any]]):
        ordered = sorted(segments, key=lambda s: int(s.get("address", 0)))
        self._starts = [int(s.get("address", 0)) for s in ordered]
        self._ends = [a + int(s.get("total_size", 0)) for a, s in zip(self._starts, ordered)]
        self._pools = [_pool_name(s.get("segment_pool_id", (0, 0))) for s in ordered]

    def pool_of(self, addr: int) -> str:
        index = bisect.bisect_right(self._starts, addr) - 1
        if index >= 0 and addr < self._ends[index]:
            return self._pools[index]
        return ""


def _pool_name(pool_id: Any) -> str:
    pool = tuple(pool_id) if pool_id is not None else (0, 0)
    return "default" if pool == (0, 0) else str(pool)
