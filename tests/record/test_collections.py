"""Python's garbage collections, timed through gc.callbacks: the full ones and the long
ones are recorded, the routine young ones are not, and the callback goes at uninstall."""

from __future__ import annotations

import gc
import time

import pytest

from graphdoctor.record.syncs import LONG_COLLECTION_NS, _watch_collections
from graphdoctor.trace.spool_records import GcRecord, SpoolRecord


class _Recorder:
    enabled = True

    def __init__(self) -> None:
        self.records: list[SpoolRecord] = []

    def now(self) -> int:
        return time.perf_counter_ns()

    def thread(self) -> int:
        return 0

    def emit(self, record: SpoolRecord) -> None:
        self.records.append(record)


def test_a_full_collection_is_recorded_and_the_hook_goes_at_uninstall() -> None:
    recorder = _Recorder()
    before = list(gc.callbacks)
    uninstall = _watch_collections(recorder)  # type: ignore[arg-type]
    gc.collect()
    uninstall()
    full = [r for r in recorder.records if isinstance(r, GcRecord) and r.generation == 2]
    assert len(full) == 1 and full[0].dur > 0
    assert gc.callbacks == before


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
    assert [r for r in recorder.records if isinstance(r, GcRecord) and r.generation == 0] == []
