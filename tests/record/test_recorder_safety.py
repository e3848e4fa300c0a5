"""What the recorder must never do to the program it records, on the CPU: take an allocator
snapshot inside a capture's end (one after each capture of PyTorch's own graph tests
corrupted the interpreter's memory on torch 2.11: a segfault after 85 tests), take a lock
or write the spool from a graph's finalizer (a collection on the flushing thread, which
held the spool's lock, deadlocked a test session), or call a freed input what is another
live graph's output (PyTorch's docs allow passing outputs between graphs of one pool)."""

from __future__ import annotations

import sys
import threading
from collections import deque
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")

from graphdoctor.record import compat  # noqa: E402
from graphdoctor.record.capture.graphs import _graph_deleted  # noqa: E402
from graphdoctor.record.capture.inputs import (  # noqa: E402
    CaptureSite,
    GraphInputs,
    GraphOutputs,
    _check,
    _Input,
)
from graphdoctor.record.device import memory  # noqa: E402
from graphdoctor.record.recorder import Recorder  # noqa: E402
from graphdoctor.trace.assemble import assemble_file  # noqa: E402
from graphdoctor.trace.event_kinds import FREED  # noqa: E402
from graphdoctor.trace.spool.file import SpoolWriter  # noqa: E402

MiB = 1 << 20


def recorder_at(tmp_path: Path) -> Recorder:
    return Recorder(SpoolWriter(str(tmp_path / "run.spool")))


def test_a_capture_end_takes_no_snapshot_and_places_what_the_block_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    totals = iter([compat.AllocatorTotals(1 * MiB, 20 * MiB, ((3, 1 * MiB),)),
                   compat.AllocatorTotals(5 * MiB, 22 * MiB, ((7, 5 * MiB),))])
    monkeypatch.setattr(compat, "allocator_totals", lambda: next(totals))

    def no_snapshot(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("an allocator snapshot was taken at a capture's end")

    monkeypatch.setattr(compat, "memory_snapshot", no_snapshot)
    recorder = recorder_at(tmp_path)
    watch = memory.AllocatorWatch(recorder)
    watch.capture_starting(0)
    pool_bytes = watch.capture_ended(0, 0, (1, 7), -1, [(0x7000, 1 * MiB)])
    recorder.spool.close()
    allocs = list(assemble_file(tmp_path / "run.spool").tables["allocs"])
    assert pool_bytes == 2 * MiB  # what the allocator reserved meanwhile, for that pool
    assert [(a.addr, a.size, a.pool, a.graph) for a in allocs] == [
        (0x7000, 1 * MiB, "(1, 7)", 0), (0, 3 * MiB, "(1, 7)", 0)]


def test_a_graph_deleted_while_its_thread_holds_the_spool_s_lock_does_not_wait(
        tmp_path: Path) -> None:
    recorder, deleted = recorder_at(tmp_path), deque[tuple[int, int]]()

    def collect_inside_a_write() -> None:  # a collection that starts inside the writer
        with recorder.spool._lock:
            _graph_deleted(deleted, recorder, 5)

    worker = threading.Thread(target=collect_inside_a_write, daemon=True)
    worker.start()
    worker.join(timeout=5)
    assert not worker.is_alive(), "the finalizer waited for a lock its thread held"
    assert [graph for graph, _ in deleted] == [5]


class _Gone:
    """A storage's weak reference, expired: its tensor was freed."""

    def expired(self) -> bool:
        return True


def _freed_input_records(tmp_path: Path, outputs: GraphOutputs) -> list[Any]:
    script = tmp_path / "two_graphs.py"
    script.write_text("g1.capture_begin()\nc = b * 2\ng1.capture_end()\n")
    recorder = recorder_at(tmp_path)
    item = _Input("b", _Gone(), 0x7000, 512, owner=outputs.owner(0x7000))
    site = CaptureSite(str(script), 1, 3, [(str(script), 1, "<module>")])
    _check(recorder, GraphInputs(1, site, [item], outputs), [item])
    recorder.spool.close()
    return list(assemble_file(tmp_path / "run.spool").input_events)


def test_an_output_of_a_live_graph_of_the_pool_is_not_a_freed_input(tmp_path: Path) -> None:
    outputs = GraphOutputs()
    outputs.add(0, [(0x7000, 512)])  # graph 0's output, read by graph 1's capture
    assert _freed_input_records(tmp_path, outputs) == []


def test_an_output_of_a_graph_captured_again_is_freed_memory(tmp_path: Path) -> None:
    outputs = GraphOutputs()
    outputs.add(0, [(0x7000, 512)])
    outputs.forget(0)  # reset() and captured again (or deleted): its pool is gone
    [event] = _freed_input_records(tmp_path, outputs)
    assert (event.kind, event.graph, event.addr) == (FREED, 1, 0x7000)


def test_a_monitoring_callback_that_fails_never_reaches_the_script(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """sys.monitoring calls graphdoctor's callbacks inside the script's own lines: what one
    raises (here, looking at an object of the script's whose attributes raise) stays in
    graphdoctor, and the event is switched off where it fired."""
    import threading
    import types

    from graphdoctor.record.eager import calls
    from graphdoctor.record.recorder import CaptureState

    disable = object()
    monkeypatch.setattr(calls, "SYS_MONITORING",
                        types.SimpleNamespace(DISABLE=disable, MISSING=object()))

    class Hostile:  # a script's object whose attributes raise
        def __getattr__(self, name: str) -> Any:
            raise RuntimeError("not this attribute")

    recorder = recorder_at(tmp_path)
    recorder.captures[threading.get_ident()] = CaptureState(0, 0, "", "torch.cuda.graph", -1)
    watcher = calls.CallSiteWatcher(recorder, calls.Monitor())
    code = test_a_monitoring_callback_that_fails_never_reaches_the_script.__code__
    assert watcher._on_call(code, 0, Hostile(), None) is disable


def test_a_graph_s_first_replays_do_not_read_its_block_s_source_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The names a captured block reads are worked out at the capture's end, and an input
    whose name the block never reads (rebound inside the block, as PyTorch's own race test
    does) is looked at once: its first replays parse nothing."""
    import torch

    from graphdoctor.record.capture import inputs
    from graphdoctor.record.frozen import captured_names

    script = tmp_path / "loop.py"
    script.write_text("g.capture_begin()\nb = a.clone()\ng.capture_end()\n")
    parsed: list[tuple[str, int, int]] = []
    real = captured_names.names_read

    def counting(path: str, begin: int, end: int) -> dict[str, int]:
        parsed.append((path, begin, end))
        return real(path, begin, end)

    monkeypatch.setattr(captured_names, "names_read", counting)
    namespace: dict[str, Any] = {"torch": torch, "b": torch.zeros(4)}
    item = _Input("b", _Alive(), namespace["b"].untyped_storage().data_ptr(), 16)
    site = CaptureSite(str(script), 1, 3, [(str(script), 1, "<module>")])
    watched = GraphInputs(0, site, [item], GraphOutputs())
    assert len(parsed) == 1  # at the capture's end
    looks: list[str] = []
    monkeypatch.setattr(inputs, "_read_at", lambda site, name: looks.append(name))
    recorder = recorder_at(tmp_path)
    namespace["look"] = lambda: inputs._check_names(recorder, watched, sys._getframe(1))
    # a script's top level: the name now holds another tensor, which the block never read
    exec("b = torch.ones(4)\nfor _ in range(5):\n    look()\n", namespace)  # noqa: S102
    assert looks == ["b"] and len(parsed) == 1


class _Alive:
    """A storage's weak reference whose tensor lives."""

    def expired(self) -> bool:
        return False
