"""The allocator history shared between a script and graphdoctor, on a stand-in allocator
(the real one needs a GPU: tests/gpu/test_transparency_gpu.py): the script's snapshots hold
what they would without graphdoctor, and graphdoctor still reads every allocation once."""

from __future__ import annotations

import time
import types
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")

from graphdoctor.record import compat  # noqa: E402 - only once torch is known to be there
from graphdoctor.record.memory import AllocatorWatch  # noqa: E402
from graphdoctor.record.recorder import RecordConfig, Recorder  # noqa: E402
from graphdoctor.trace import spool_records as sr  # noqa: E402
from graphdoctor.trace.spool import SpoolWriter  # noqa: E402


class StandInAllocator:
    """Records history as torch's caching allocator does: entries while on, cleared when
    turned off or asked to, and a "snapshot" entry for each snapshot taken while on."""

    def __init__(self) -> None:
        self.on = False
        self.entries: list[dict[str, Any]] = []
        self.allocations = 0

    def record(self, on: bool, clear: bool) -> None:
        self.on = on
        if clear or not on:
            self.entries.clear()

    def alloc(self) -> None:
        self.allocations += 1
        self._entry("alloc", addr=self.allocations, size=512)

    def snapshot(self) -> dict[str, Any]:
        self._entry("snapshot")
        block = {"state": "active_allocated", "size": 512, "address": 1,
                 "frames": [{"filename": "x.py", "line": 1, "name": "f"}] if self.on else []}
        return {"segments": [{"address": 0, "total_size": 1024, "segment_pool_id": (0, 0),
                              "blocks": [block]}],
                "device_traces": [[dict(entry) for entry in self.entries]]}

    def _entry(self, action: str, **fields: Any) -> None:
        if self.on:
            self.entries.append({"action": action, "time_us": time.time_ns() // 1000, **fields})
            time.sleep(0.002)  # entries of the script's apart from graphdoctor's snapshots


class Run:
    """A script's calls on ``torch.cuda.memory``, with or without graphdoctor's watch."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, mode: str | None):
        self.allocator = allocator = StandInAllocator()

        def _record_memory_history(enabled: Any = "all", context: Any = "all",
                                   stacks: str = "all", max_entries: int = 0, device: Any = None,
                                   clear_history: bool = False, **rest: Any) -> None:
            allocator.record(compat.HistoryCall((enabled,), {}).turns_on, clear_history)

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
                            clear=False: allocator.record(on, clear) or True)
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

    def snapshot(self) -> tuple[list[str], int]:
        """What the script's _snapshot() holds: its entries' actions, its blocks' stacks."""
        snapshot = self.memory._snapshot()
        blocks = [b for s in snapshot["segments"] for b in s["blocks"] if b.get("frames")]
        return [e["action"] for e in snapshot["device_traces"][0]], len(blocks)

    def graphdoctors_allocations(self) -> list[int]:
        return [r.addr for r in self.emitted if isinstance(r, sr.AllocRecord)
                and r.action == "alloc" and r.pool == "default"]


def script(run: Run) -> list[tuple[list[str], int]]:
    """Allocates, turns its history on around two captures, snapshots; turns it off and
    snapshots again; allocates and snapshots once more."""
    run.allocator.alloc()
    run.memory._record_memory_history(max_entries=100000)
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
    assert plain[0] == (["alloc", "alloc", "alloc", "snapshot"], 1)
    recorded = Run(monkeypatch, tmp_path, mode)
    assert script(recorded) == plain
    if mode == "full":  # every allocation read once, before, during and after the script's
        recorded.watch.finish()
        assert recorded.graphdoctors_allocations() == [1, 2, 3, 4, 5]
        assert not recorded.allocator.on  # graphdoctor's own history, turned off at the end


def test_graphdoctor_leaves_the_scripts_history_on_at_the_end(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    run = Run(monkeypatch, tmp_path, "full")
    run.memory._record_memory_history()
    run.capture(0)
    run.watch.finish()
    assert run.allocator.on and run.snapshot() == (["alloc", "snapshot"], 1)
