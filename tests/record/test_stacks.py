"""The stack table hands out each frame and stack id once, from any thread."""

from __future__ import annotations

import sys
import threading

from graphdoctor.record.stacks import StackTable
from graphdoctor.trace.spool.records import FrameRecord, SpoolRecord, StackRecord


def test_ids_stay_unique_and_dense_across_threads() -> None:
    records: list[SpoolRecord] = []
    table = StackTable(records.append)
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    try:
        threads = [threading.Thread(target=lambda n=n: [table.from_named(
            [("/u/t.py", n * 1000 + i, "f"), ("/u/t.py", 1, "<module>")]) for i in range(200)])
            for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(0.005)
    stack_ids = [r.id for r in records if isinstance(r, StackRecord)]
    frame_ids = [r.id for r in records if isinstance(r, FrameRecord)]
    assert sorted(stack_ids) == list(range(800))
    assert sorted(frame_ids) == list(range(801))  # 800 distinct lines and the shared <module>


def test_live_and_named_stacks_share_one_id_space() -> None:
    records: list[SpoolRecord] = []
    table = StackTable(records.append)
    live = table.capture(0)
    named = table.from_named([("/u/t.py", 3, "g")])
    assert (live, named) == (0, 1) and table.capture(0) != named
