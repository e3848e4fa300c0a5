"""Python's garbage collections, timed through gc.callbacks: the full ones and the long
ones are recorded, the routine young ones are not, and the callback goes at uninstall."""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from graphdoctor.record.host.syncs import LONG_COLLECTION_NS, _watch_collections
from graphdoctor.record.recorder import Recorder
from graphdoctor.trace.event_kinds import GcPause
from graphdoctor.trace.spool.file import SpoolWriter
from graphdoctor.trace.spool.records import SpoolRecord


class _Recorder:
    enabled = True

    def __init__(self) -> None:
        self.records: list[SpoolRecord] = []
        self.heartbeats: list[Callable[[], None]] = []

    def now(self) -> int:
        return time.perf_counter_ns()

    def thread_of(self, ident: int) -> int:
        return 0

    def emit_many(self, records: list[SpoolRecord]) -> None:
        self.records += records


def test_a_full_collection_is_recorded_and_the_hook_goes_at_uninstall() -> None:
    recorder = _Recorder()
    before = list(gc.callbacks)
    uninstall = _watch_collections(recorder)  # type: ignore[arg-type]
    gc.collect()
    assert recorder.records == []  # written by the heartbeat, never from inside a collection
    recorder.heartbeats[0]()
    uninstall()
    full = [r for r in recorder.records if isinstance(r, GcPause) and r.generation == 2]
    assert len(full) == 1 and full[0].dur > 0
    assert gc.callbacks == before and recorder.heartbeats == []


def test_short_young_collections_are_left_out() -> None:
    recorder = _Recorder()
    uninstall = _watch_collections(recorder)  # type: ignore[arg-type]
    try:
        started = time.perf_counter_ns()
        gc.collect(0)
        took = time.perf_counter_ns() - started
    finally:
        uninstall()
    if took >= LONG_COLLECTION_NS:
        pytest.skip(f"this young collection took {took} ns: a long one, rightly recorded")
    assert [r for r in recorder.records if isinstance(r, GcPause) and r.generation == 0] == []


def test_a_collection_inside_the_spool_writers_lock_does_not_deadlock(tmp_path: Path) -> None:
    """A collection can start while the thread holds the spool's lock (an allocation in
    write or flush): the callback must not wait for that lock."""
    recorder = Recorder(SpoolWriter(tmp_path / "s.spool"))
    uninstall = _watch_collections(recorder)

    def collect_holding_the_lock() -> None:
        with recorder.spool._lock:
            gc.collect()

    worker = threading.Thread(target=collect_holding_the_lock, daemon=True)
    worker.start()
    worker.join(timeout=20)
    uninstall()
    assert not worker.is_alive()
