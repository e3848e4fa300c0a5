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
In the default mode, a recompile for a re-allocated CUDA tensor (or a static input that
moved) turns the allocator's "state" history on for the rest of the run: live blocks keep
their stacks, no entries are written, and a tensor named later is placed by reading its
block's stack from one snapshot (``stacks_at``).

The history is shared with the script's own use of it (``_record_memory_history`` and
``_snapshot`` in ``torch.cuda.memory``, which graphdoctor wraps), so that the script's
snapshots hold what they would without graphdoctor:
- while the script records history, graphdoctor reads it without clearing it (each entry
  once, past a watermark) and never turns it off; the script's own turning on starts from an
  empty history, as it would, and the "snapshot" entries graphdoctor's snapshots leave in it
  are taken out of the script's snapshots;
- while it does not, --full records its own, which the script's snapshots do not show (no
  history entries), and clears what it has read; when the script turns its history off,
  --full's own goes on;
- either way, the stacks --full's own history gave blocks and segments are taken out of the
  script's snapshots. The allocator keeps a block's stack from its allocation until it is
  freed, and a segment's while it is reserved, whatever history is turned on or off
  meanwhile: a tensor allocated before the script turned its history on still shows
  graphdoctor's stack in the script's snapshot, and one the script's history saw allocated
  keeps the script's stack after it turns its history off. Which blocks and segments hold
  graphdoctor's stacks is read from the history entries themselves (``_OwnStacks``), the
  script's snapshots included.
"""

from __future__ import annotations

import bisect
import functools
import time
from collections import deque
from typing import Any

from graphdoctor.record import compat
from graphdoctor.record.recorder import Recorder, Uninstall, patch
from graphdoctor.trace.event_kinds import Alloc, MemorySample
from graphdoctor.trace.names import FULL_MODE

DRAIN_EVERY_NS = 1_000_000_000
CLOCK_SLACK_US = 100  # between Python's clock and the allocator's stamps on history entries
OWN_SNAPSHOTS_KEPT = 4096
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
        self._history_on = False  # --full reads the allocator history (its own or the script's)
        self._script_history = False  # the script has turned its own history on
        self._read_up_to: dict[int, _Watermark] = {}  # device -> the entries already read
        self._own_snapshots: deque[tuple[int, int]] = deque(maxlen=OWN_SNAPSHOTS_KEPT)
        self._own_stacks = _OwnStacks()  # the live blocks and segments --full's history saw
        self._stacks_kept = False  # graphdoctor keeps live blocks' stacks ("state" history)
        self._last_drain = 0
        self._before: dict[int, compat.AllocatorTotals] = {}  # graph -> totals as it began
        self._pool_bytes: dict[tuple[int, int], int] = {}  # pool -> bytes reserved for it

    def install(self, recorder: Recorder) -> Uninstall | None:
        module = compat.HistoryCall.module()
        undos = [] if module is None else [
            patch(module, "_record_memory_history", self._wrap_record_history),
            patch(module, "_snapshot", self._wrap_snapshot)]
        if recorder.config.mode == FULL_MODE and not compat.lazy_cuda_call(self._turn_on):
            recorder.note("allocations outside captures", "torch.cuda._lazy_call is missing")

        def uninstall() -> None:
            for undo in reversed(undos):
                undo()

        return uninstall

    def _turn_on(self) -> None:
        self._history_on = self._script_history or compat.memory_history(
            True, stacks=True, max_entries=self._rec.config.max_memory_entries)
        if not self._history_on:
            self._rec.note("allocations",
                           "torch.cuda.memory._record_memory_history is unavailable")

    def _wrap_record_history(self, original: Any) -> Any:
        @functools.wraps(original)
        def _record_memory_history(*args: Any, **kwargs: Any) -> None:
            call = compat.HistoryCall(args, kwargs)
            self.drain()  # what the history holds up to the script's change
            if call.turns_on and not self._script_history and self._history_on:
                args, kwargs = call.clearing_first()  # none of --full's entries for the script
            original(*args, **kwargs)
            self._script_history = call.turns_on
            if not call.turns_on and self._history_on:
                self._turn_on()  # --full's own history goes on
            elif not call.turns_on and self._stacks_kept:
                self._keep_stacks()  # and so does keeping stacks

        return _record_memory_history

    def _wrap_snapshot(self, original: Any) -> Any:
        @functools.wraps(original)
        def _snapshot(*args: Any, **kwargs: Any) -> Any:
            snapshot = original(*args, **kwargs)
            if self._history_on:  # its entries up to now, and whose stacks its blocks hold
                self._take_in(snapshot)
            return self._as_the_script_sees_it(snapshot)

        return _snapshot

    def _as_the_script_sees_it(self, snapshot: dict[str, Any]) -> dict[str, Any]:
        traces = snapshot.get("device_traces", [])
        if self._script_history:
            snapshot["device_traces"] = [self._without_own_snapshots(trace) for trace in traces]
        elif self._history_on:  # --full's own history: the script recorded none
            snapshot["device_traces"] = [[] for _ in traces]
        self._own_stacks.take_out(snapshot)
        if self._stacks_kept and not self._script_history:
            _without_frames(snapshot)  # the stacks graphdoctor kept; the script kept none
        return snapshot

    def _without_own_snapshots(self, trace: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The trace less the "snapshot" entries graphdoctor's own snapshots left: for each
        of them, the one nearest its time, within the clocks' slack."""
        stamps = {i: int(e.get("time_us", 0)) for i, e in enumerate(trace)
                  if e.get("action") == "snapshot"}
        own: set[int] = set()
        for start, end in self._own_snapshots:
            near = [i for i, stamp in stamps.items() if i not in own
                    and start - CLOCK_SLACK_US <= stamp <= end + CLOCK_SLACK_US]
            if near:
                own.add(min(near, key=lambda i: abs(stamps[i] - (start + end) / 2)))
        return [entry for i, entry in enumerate(trace) if i not in own]

    def _snapshot(self, pool: tuple[int, int] | None = None,
                  traces: bool = True) -> dict[str, Any] | None:
        """graphdoctor's own snapshot, remembered while it leaves an entry in the script's
        history."""
        start = time.time_ns() // 1000
        snapshot = compat.memory_snapshot(pool, traces)
        if self._script_history:
            self._own_snapshots.append((start, time.time_ns() // 1000))
        return snapshot

    def capture_starting(self, graph: int) -> None:
        """Sample the totals (kept, to see what the capture allocated); drain --full's history."""
        self._before[graph] = self._record_totals(graph)
        if self._history_on:
            self.drain()

    def capture_ended(self, graph: int, device: int, pool: tuple[int, int] | None,
                      stack: int, outputs: list[tuple[int, int]] | None = None) -> int:
        """Record what the capture allocated; return the bytes the graph's pool reserves:
        what the allocator reserved meanwhile, added up per pool (graphs that share one add
        to it). ``outputs``: (address, bytes) of what the block left named, placed at the
        capture's line; what else it left allocated is one record of its own. No snapshot
        of the allocator is taken here: one taken right after each capture of a long test
        session corrupted the interpreter's memory on torch 2.11 (a segfault after 85 of
        PyTorch's own graph tests; none with this part off); --full's history, which the
        user asked for, still reads one."""
        recorder = self._rec
        before = self._before.pop(graph, compat.AllocatorTotals(0, 0))
        after = self._record_totals(graph)
        key = pool or (graph, -1)
        self._pool_bytes[key] = self._pool_bytes.get(key, 0) \
            + max(0, after.reserved - before.reserved)
        if self._history_on:
            self.drain(graph)
        elif recorder.config.allocations and before.made != after.made:
            recorder.emit_many(_capture_allocations(
                recorder.now(), graph, device, before, after, outputs or [], _pool_name(pool),
                stack))
        return self._pool_bytes[key]

    def sample(self, graph: int) -> None:
        """Record the allocator's totals now (and drain --full's history once a second)."""
        self._record_totals(graph)
        self._maybe_drain()

    def watch_allocations(self, why: str) -> None:
        """Keep each live block's allocation stack from now on (the allocator's "state"
        history, without --full's entries): asked once torch.compile has compiled again
        for a re-allocated tensor, or CUDA graph trees recorded again for a moved one, which
        has cost seconds already, so that the next one names the line that made it. A no-op
        where a history with stacks is on already, or allocations are not recorded."""
        if self._history_on or self._script_history or self._stacks_kept \
                or not self._rec.config.allocations:
            return
        self._stacks_kept = self._keep_stacks()
        if self._stacks_kept:
            self._rec.note("allocation stacks before " + why,
                           "kept from then on (--full keeps them from the start)")

    def _keep_stacks(self) -> bool:
        return compat.memory_history(True, stacks=True, max_entries=1, state_only=True)

    def stacks_at(self, addrs: list[int]) -> list[int]:
        """The stack the allocator keeps for the live block at each address (read from one
        snapshot); -1 where no history with stacks is on, or it kept none."""
        if not (self._history_on or self._script_history or self._stacks_kept):
            return [-1] * len(addrs)
        blocks = _blocks_at(self._snapshot(traces=False) or {}, set(addrs))
        return [self._rec.stacks.from_named(list(_named(blocks[a].get("frames"))))
                if a in blocks and blocks[a].get("frames") else -1 for a in addrs]

    def finish(self) -> None:
        self.drain()
        if (self._history_on or self._stacks_kept) and not self._script_history:
            compat.memory_history(False, stacks=False, max_entries=0)  # the script's stays
        self._history_on = self._stacks_kept = False

    def _maybe_drain(self) -> None:
        now = time.perf_counter_ns()
        if self._history_on and now - self._last_drain > DRAIN_EVERY_NS:
            self.drain()

    def drain(self, capture_graph: int = -1) -> dict[str, Any] | None:
        """Move the allocator history's new entries into the spool (and clear --full's own
        history); return the snapshot."""
        if not self._history_on:
            return None
        snapshot = self._snapshot()
        if snapshot is not None:
            self._take_in(snapshot, capture_graph)
        return snapshot

    def _take_in(self, snapshot: dict[str, Any], capture_graph: int = -1) -> None:
        """Move the snapshot's history entries not yet read into the spool, noting the stacks
        --full's own history gave (and clear that history)."""
        self._last_drain = time.perf_counter_ns()
        recorder = self._rec
        own = not self._script_history
        if own:
            compat.memory_history(True, stacks=True,
                                  max_entries=recorder.config.max_memory_entries, clear=True)
        pools = _SegmentPools(snapshot.get("segments", []))
        records = []
        for device, trace in enumerate(snapshot.get("device_traces", [])):
            for entry in self._unread(device, trace):
                stack = _named(entry.get("frames"))
                self._own_stacks.read(device, entry, stack, own)
                if entry.get("action", "") in ACTIONS:
                    records.append(_record(recorder, entry, stack, pools, capture_graph, device))
        recorder.emit_many(records)

    def _unread(self, device: int, trace: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return self._read_up_to.setdefault(device, _Watermark()).unread(trace)

    def _record_totals(self, graph: int) -> compat.AllocatorTotals:
        recorder = self._rec
        totals = compat.allocator_totals()
        recorder.emit(MemorySample(recorder.now(), totals.allocated, totals.reserved, graph))
        return totals


def _capture_allocations(t: int, graph: int, device: int, before: compat.AllocatorTotals,
                         after: compat.AllocatorTotals, outputs: list[tuple[int, int]],
                         pool: str, stack: int) -> list[Alloc]:
    """What the capture left allocated in the graph's pool: each output its block named,
    and the rest in one record (address 0); and what other devices allocated."""
    records = [Alloc(t, "alloc", addr, size, 0, pool, graph, stack, device)
               for addr, size in outputs]
    rest = after.allocated - before.allocated - sum(size for _, size in outputs)
    if rest > 0:
        records.append(Alloc(t, "alloc", 0, rest, 0, pool, graph, stack, device))
    for other, (made, was) in enumerate(zip(after.made, before.made)):
        if other != device and made != was:
            records.append(Alloc(t, "alloc", 0, made[1] - was[1], 0, "default", graph,
                            stack, other))
    return records


def _blocks_at(snapshot: dict[str, Any], addrs: set[int]) -> dict[int, dict[str, Any]]:
    """The snapshot's blocks that begin at one of the addresses."""
    return {int(block["address"]): block for segment in snapshot.get("segments", [])
            for block in segment.get("blocks", []) if int(block.get("address", -1)) in addrs}


def _without_frames(snapshot: dict[str, Any]) -> None:
    """Empty every block's and segment's stack, as a snapshot without any history shows."""
    for segment in snapshot.get("segments", []):
        segment["frames"] = []
        for block in segment.get("blocks", []):
            block["frames"] = []


def _named(frames: list[dict[str, Any]] | None) -> tuple[tuple[str, int, str], ...]:
    """A history entry's (or a block's) stack, as (file, line, function), innermost first."""
    return tuple((f.get("filename", "?"), int(f.get("line", 0)), f.get("name", "?"))
                 for f in frames or ())


def _record(recorder: Recorder, entry: dict[str, Any], stack: tuple[tuple[str, int, str], ...],
            pools: _SegmentPools, capture_graph: int, device: int) -> Alloc:
    addr = int(entry.get("addr", 0))
    return Alloc(recorder.from_unix_us(entry.get("time_us", 0)), entry["action"], addr,
            int(entry.get("size", 0)), int(entry.get("stream", 0)), pools.pool_of(addr),
            capture_graph, recorder.stacks.from_named(list(stack)) if stack else -1, device)


class _Watermark:
    """The newest history entry read on one device (its stamp, and how many entries bear
    it), so that a history that is not cleared after reading is read once all the same."""

    def __init__(self) -> None:
        self.stamp = -1
        self.read_at_stamp = 0

    def unread(self, trace: list[dict[str, Any]]) -> list[dict[str, Any]]:
        fresh, at_stamp = [], 0
        for entry in trace:
            stamp = int(entry.get("time_us", 0))
            if stamp == self.stamp:
                at_stamp += 1
            if stamp > self.stamp or (stamp == self.stamp and at_stamp > self.read_at_stamp):
                fresh.append(entry)
        if trace:
            newest = max(int(entry.get("time_us", 0)) for entry in trace)
            self.read_at_stamp = sum(int(e.get("time_us", 0)) == newest for e in trace)
            self.stamp = newest
        return fresh


class _OwnStacks:
    """The live blocks and segments whose stacks --full's own history recorded, by device and
    address, each with its stack's hash; read from history entries in order, each once.

    An allocation's entry carries the very stack the allocator keeps for its block (and a
    segment's, for its segment), so a block at a known address shows graphdoctor's stack only
    while its stack is still that one: should an entry be lost (the script's history can hold
    as few entries as it likes), a later allocation at the same address is not mistaken."""

    def __init__(self) -> None:
        self._blocks: dict[tuple[int, int], int] = {}
        self._segments: dict[tuple[int, int], int] = {}

    def read(self, device: int, entry: dict[str, Any], stack: tuple[tuple[str, int, str], ...],
             own: bool) -> None:
        """One history entry and its stack, recorded by --full's own history (``own``) or by
        the script's."""
        action = entry.get("action", "")
        kept = (self._blocks if action in ("alloc", "free_completed")
                else self._segments if action.startswith("segment_") else None)
        if kept is None:
            return
        where = (device, int(entry.get("addr", 0)))
        if own and stack and action in ("alloc", "segment_alloc", "segment_map"):
            kept[where] = hash(stack)
        else:  # freed, or allocated again under the script's history
            kept.pop(where, None)

    def take_out(self, snapshot: dict[str, Any]) -> None:
        """Empty the stacks of the snapshot's blocks and segments that are graphdoctor's, as
        the allocator shows a block it kept no stack for."""
        if not (self._blocks or self._segments):
            return
        for segment in snapshot.get("segments", []):
            device = int(segment.get("device", 0))
            self._take_out_of(segment, self._segments, device)
            for block in segment.get("blocks", []):
                self._take_out_of(block, self._blocks, device)

    @staticmethod
    def _take_out_of(item: dict[str, Any], kept: dict[tuple[int, int], int],
                     device: int) -> None:
        frames = item.get("frames")
        signature = kept.get((device, int(item.get("address", 0))))
        if frames and signature is not None and hash(_named(frames)) == signature:
            item["frames"] = []


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
