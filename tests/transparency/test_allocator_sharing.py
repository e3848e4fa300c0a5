"""The allocator history shared between a script and graphdoctor, on a stand-in allocator
(the real one needs a GPU: tests/gpu/test_transparency_gpu.py): the script's snapshots hold
what they would without graphdoctor, and graphdoctor still reads every allocation once."""

from __future__ import annotations

import sys
import time
import types
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")

from graphdoctor.record import compat  # noqa: E402 - only once torch is known to be there
from graphdoctor.record.device.memory import AllocatorWatch  # noqa: E402
from graphdoctor.record.recorder import RecordConfig, Recorder  # noqa: E402
from graphdoctor.trace.event_kinds import Alloc
from graphdoctor.trace.spool.file import SpoolWriter  # noqa: E402


class StandInAllocator:
    """Records history as torch's caching allocator does: entries while on (the newest
    ``max_entries``), cleared when turned off or asked to, and a "snapshot" entry for each
    snapshot taken while on. A block keeps the stack of its allocation (if history was on
    then) until it is freed, whatever is turned on or off meanwhile; its segment, that of the
    allocation that reserved it."""

    SEGMENT = 1 << 20

    def __init__(self) -> None:
        self.on = self.state_only = False
        self.max_entries = sys.maxsize
        self.entries: list[dict[str, Any]] = []
        self.allocations = 0
        self.blocks: dict[int, list[dict[str, Any]]] = {}  # address -> its allocation's stack
        self.segment: list[dict[str, Any]] | None = None  # its stack, once reserved

    def record(self, on: bool, clear: bool, max_entries: int = sys.maxsize,
               state_only: bool = False) -> None:
        """Turn history on or off; ``state_only`` keeps blocks' stacks and no entries."""
        self.on, self.max_entries, self.state_only = on, max(1, max_entries), state_only
        if clear or not on:
            self.entries.clear()

    def alloc(self, addr: int | None = None) -> None:
        """Allocate at a new address, or at ``addr`` again once it was freed."""
        self.allocations += 1
        frames = [{"filename": "x.py", "line": self.allocations, "name": "f"}] if self.on else []
        if self.segment is None:
            self.segment = frames
            self._entry("segment_alloc", addr=0, size=self.SEGMENT, frames=frames)
        addr = self.allocations if addr is None else addr
        self.blocks[addr] = frames
        self._entry("alloc", addr=addr, size=512, frames=frames)

    def free(self, addr: int) -> None:
        frames = self.blocks.pop(addr)
        self._entry("free_requested", addr=addr, size=512, frames=frames)
        self._entry("free_completed", addr=addr, size=512, frames=frames)

    def snapshot(self) -> dict[str, Any]:
        self._entry("snapshot")
        blocks = [{"state": "active_allocated", "size": 512, "address": addr,
                   "frames": list(frames)} for addr, frames in sorted(self.blocks.items())]
        return {"segments": [{"device": 0, "address": 0, "total_size": self.SEGMENT,
                              "segment_pool_id": (0, 0), "frames": list(self.segment or []),
                              "blocks": blocks}],
                "device_traces": [[dict(entry) for entry in self.entries]]}

    def _entry(self, action: str, **fields: Any) -> None:
        if self.on and not self.state_only:
            self.entries.append({"action": action, "time_us": time.time_ns() // 1000, **fields})
            del self.entries[:-self.max_entries]
            time.sleep(0.002)  # entries of the script's apart from graphdoctor's snapshots


Seen = tuple[list[str], list[int], int, int]


class Run:
    """A script's calls on ``torch.cuda.memory``, with or without graphdoctor's watch."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, mode: str | None):
        self.allocator = allocator = StandInAllocator()

        def _record_memory_history(enabled: Any = "all", context: Any = "all",
                                   stacks: str = "all", max_entries: int = sys.maxsize,
                                   device: Any = None, clear_history: bool = False,
                                   **rest: Any) -> None:
            allocator.record(compat.HistoryCall((enabled,), {}).turns_on, clear_history,
                             max_entries)

        self.memory = types.SimpleNamespace(_record_memory_history=_record_memory_history,
                                            _snapshot=lambda: allocator.snapshot())
        self.emitted: list[Any] = []
        self.watch = self._watch(monkeypatch, tmp_path, mode) if mode else None

    def _watch(self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
               mode: str) -> AllocatorWatch:
        allocator = self.allocator
        monkeypatch.setattr(compat.HistoryCall, "module", staticmethod(lambda: self.memory))
        monkeypatch.setattr(compat, "lazy_cuda_call", lambda fn: fn() or True)
        monkeypatch.setattr(compat, "memory_history", lambda on, *, stacks, max_entries,
                            clear=False, state_only=False: allocator.record(
                                on, clear, max_entries, state_only) or True)
        monkeypatch.setattr(compat, "memory_snapshot",
                            lambda pool=None, traces=True: allocator.snapshot())
        monkeypatch.setattr(compat, "allocator_totals", lambda: compat.AllocatorTotals(
            0, 0, ((allocator.allocations, 512 * allocator.allocations),)))
        recorder = Recorder(SpoolWriter(tmp_path / "run.spool"), RecordConfig(mode))
        monkeypatch.setattr(recorder, "emit_many", self.emitted.extend)
        watch = AllocatorWatch(recorder)
        watch.install(recorder)
        return watch

    def capture(self, graph: int) -> None:
        if self.watch:
            self.watch.capture_starting(graph)
        self.allocator.alloc()
        if self.watch:
            self.watch.capture_ended(graph, 0, (1, 0), -1)

    def snapshot(self) -> Seen:
        """What the script's _snapshot() holds: its entries' actions, the blocks with a stack,
        the segments with one, and how many blocks and segments lack "frames" (torch gives
        each one, empty where it kept no stack)."""
        snapshot = self.memory._snapshot()
        segments = snapshot["segments"]
        return ([e["action"] for e in snapshot["device_traces"][0]],
                [b["address"] for s in segments for b in s["blocks"] if b.get("frames")],
                sum(bool(s.get("frames")) for s in segments),
                sum("frames" not in item for s in segments for item in (s, *s["blocks"])))

    def graphdoctors_allocations(self) -> list[int]:
        return [r.addr for r in self.emitted if isinstance(r, Alloc)
                and r.action == "alloc" and r.pool == "default"]


def script(run: Run) -> list[Seen]:
    """Allocates twice, turns its history on, frees the second and allocates at its address
    again, allocates around two captures, snapshots; turns its history off and snapshots
    again; allocates and snapshots once more."""
    run.allocator.alloc()
    run.allocator.alloc()
    run.memory._record_memory_history(max_entries=100000)
    run.allocator.free(2)
    run.allocator.alloc(2)
    run.allocator.alloc()
    run.capture(0)
    run.capture(1)
    seen = [run.snapshot()]
    run.memory._record_memory_history(enabled=None)
    seen.append(run.snapshot())
    run.allocator.alloc()
    seen.append(run.snapshot())
    return seen


@pytest.mark.parametrize("mode", ["default", "full"])
def test_the_scripts_snapshots_hold_what_they_would_without_graphdoctor(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, mode: str) -> None:
    plain = script(Run(monkeypatch, tmp_path, None))
    entries = ["free_requested", "free_completed", "alloc", "alloc", "alloc", "alloc", "snapshot"]
    assert plain == [(entries, [2, 4, 5, 6], 0, 0), ([], [2, 4, 5, 6], 0, 0),
                     ([], [2, 4, 5, 6], 0, 0)]
    recorded = Run(monkeypatch, tmp_path, mode)
    assert script(recorded) == plain
    if mode == "full":  # every allocation read once, before, during and after the script's
        recorded.watch.finish()
        assert recorded.graphdoctors_allocations() == [1, 2, 2, 4, 5, 6, 7]
        assert not recorded.allocator.on  # graphdoctor's own history, turned off at the end


def test_graphdoctor_leaves_the_scripts_history_on_at_the_end(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    run = Run(monkeypatch, tmp_path, "full")
    run.memory._record_memory_history()
    run.capture(0)
    run.watch.finish()
    assert run.allocator.on
    assert run.snapshot() == (["segment_alloc", "alloc", "snapshot"], [1], 1, 0)


def test_a_block_the_scripts_history_lost_the_allocation_of_keeps_its_stack(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Freed and allocated again while the script's history keeps a single entry: its stack
    is no longer the one graphdoctor's history gave, and stays."""
    def allocations(run: Run) -> list[int]:
        run.allocator.alloc()
        run.memory._record_memory_history(max_entries=1)
        run.allocator.free(1)
        run.allocator.alloc(1)
        run.allocator.alloc()
        return run.snapshot()[1]

    assert allocations(Run(monkeypatch, tmp_path, None)) == [1, 3]
    assert allocations(Run(monkeypatch, tmp_path, "full")) == [1, 3]


def test_stacks_kept_from_a_recompile_on_name_later_blocks_and_stay_out_of_the_script(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """In the default mode, a re-allocated tensor turns the allocator's "state" history on:
    blocks allocated from then on keep their stacks, which graphdoctor reads from one
    snapshot, while the script's own snapshots show none, as without graphdoctor."""
    run = Run(monkeypatch, tmp_path, "default")
    run.allocator.alloc()
    assert run.watch is not None and run.watch.stacks_at([1]) == [-1]  # nothing kept yet
    run.watch.watch_allocations("the first re-allocated tensor")
    run.allocator.alloc()
    assert run.allocator.on and run.allocator.entries == []  # stacks, but no history
    before, after, nowhere = run.watch.stacks_at([1, 2, 99])
    assert before == -1 and nowhere == -1 and after >= 0
    assert run.snapshot() == ([], [], 0, 0)
    run.memory._record_memory_history(max_entries=10)  # the script's own, then off again
    run.memory._record_memory_history(enabled=None)
    assert run.allocator.on and run.allocator.state_only  # kept on after the script's
    run.watch.finish()
    assert not run.allocator.on
