"""Allocations, from the caching allocator's own history, and allocator totals over time.

The default mode turns the allocator history on (with Python stacks) only for the span of
each capture, where every allocation matters and the span is short. The full mode keeps it
on for the whole run, drained into the spool at each capture boundary and about once a
second. Each allocation's pool is found by joining its address to the snapshot's segments
(``segment_pool_id`` is (0, 0) for the default pool, a graph's private pool otherwise); the
2.11 history entries carry no pool of their own.
"""

from __future__ import annotations

import bisect
import time
from typing import Any

from graphdoctor.record import compat
from graphdoctor.record.recorder import Recorder

DRAIN_EVERY_NS = 1_000_000_000
_state: dict[str, Any] = {"full": False, "on": False, "last_drain": 0}


def install(recorder: Recorder) -> None:
    if recorder.config.mode != "full":
        return None
    _state["full"] = True
    if not compat.lazy_cuda_call(lambda: _turn_on(recorder)):
        recorder.note("allocations outside captures", "torch.cuda._lazy_call is missing")
    return None


def _turn_on(recorder: Recorder) -> None:
    _state["on"] = compat.memory_history(True, stacks=True,
                                         max_entries=recorder.config.max_memory_entries)
    if not _state["on"]:
        recorder.note("allocations", "torch.cuda.memory._record_memory_history is unavailable")


def capture_starting(recorder: Recorder) -> None:
    if _state["on"]:
        drain(recorder)
        return
    _state["on"] = compat.memory_history(True, stacks=True,
                                         max_entries=recorder.config.max_memory_entries)


def capture_ended(recorder: Recorder, graph: int, pool: str) -> tuple[int, set[int]]:
    """Drain the history of the capture; return the bytes the graph's pool reserves and the
    addresses the capture allocated."""
    snapshot = drain(recorder, capture_graph=graph)
    if not _state["full"] and _state["on"]:
        compat.memory_history(False, stacks=False, max_entries=0)
        _state["on"] = False
    if snapshot is None:
        return (0, set())
    allocated = {int(e.get("addr", 0)) for trace in snapshot.get("device_traces", [])
                 for e in trace if e.get("action") == "alloc"}
    pool_bytes = sum(int(s.get("total_size", 0)) for s in snapshot.get("segments", [])
                     if pool and str(tuple(s.get("segment_pool_id", ()))) == pool)
    return (pool_bytes, allocated)


def maybe_drain(recorder: Recorder) -> None:
    now = time.perf_counter_ns()
    if _state["full"] and _state["on"] and now - _state["last_drain"] > DRAIN_EVERY_NS:
        drain(recorder)


def drain(recorder: Recorder, capture_graph: int = -1) -> dict[str, Any] | None:
    """Move the allocator history into the spool and clear it; return the snapshot."""
    if not _state["on"]:
        return None
    _state["last_drain"] = time.perf_counter_ns()
    snapshot = compat.memory_snapshot()
    if snapshot is None:
        return None
    compat.memory_history(True, stacks=True, max_entries=recorder.config.max_memory_entries,
                          clear=True)
    pools = _SegmentPools(snapshot.get("segments", []))
    for device, trace in enumerate(snapshot.get("device_traces", [])):
        for entry in trace:
            _emit_entry(recorder, entry, pools, capture_graph, device)
    return snapshot


def _emit_entry(recorder: Recorder, entry: dict[str, Any], pools: _SegmentPools,
                capture_graph: int, device: int) -> None:
    action = entry.get("action", "")
    if action not in ("alloc", "free_requested", "free_completed", "segment_alloc",
                      "segment_free"):
        return
    addr = int(entry.get("addr", 0))
    frames = entry.get("frames") or []
    stack = recorder.stacks.from_named(
        [(f.get("filename", "?"), int(f.get("line", 0)), f.get("name", "?")) for f in frames]
    ) if frames else -1
    recorder.emit(["alloc", recorder.from_unix_us(entry.get("time_us", 0)), action, addr,
                   int(entry.get("size", 0)), int(entry.get("stream", 0)), pools.pool_of(addr),
                   capture_graph, stack, device])


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


def sample(recorder: Recorder, graph: int) -> None:
    allocated, reserved = compat.allocator_totals()
    recorder.emit(["mem", recorder.now(), allocated, reserved, graph])
    maybe_drain(recorder)


def finish(recorder: Recorder) -> None:
    drain(recorder)
    if _state["on"]:
        compat.memory_history(False, stacks=False, max_entries=0)
        _state["on"] = False
