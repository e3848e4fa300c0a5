"""What a recompile's guard or a re-recording names is recorded without ever raising into
torch: the moved inputs of a "Re-recording" message, with the stacks the allocator kept, and
an error of graphdoctor's own noted instead."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("torch")

from graphdoctor.record.compile import guarded  # noqa: E402
from graphdoctor.trace.spool import records as sr

MESSAGE = ("Re-recording function=forward, mode=inference, reason=static input data pointer "
           "changed.\ninput name: arg0_1. data pointer changed from 4096 to 8192. input stack "
           "trace: None\ninput name: arg1_1. data pointer changed from 12288 to 16384. input "
           "stack trace: None\n")


class Memory:
    def __init__(self, broken: bool = False) -> None:
        self.broken, self.watched = broken, []

    def stacks_at(self, addrs: list[int]) -> list[int]:
        if self.broken:
            raise RuntimeError("snapshot failed")
        return [7 if addr == 16384 else -1 for addr in addrs]

    def watch_allocations(self, why: str) -> None:
        self.watched.append(why)


class Recorder:
    def __init__(self, memory: Memory) -> None:
        self.memory, self.emitted, self.notes = memory, [], []

    def now(self) -> int:
        return 5

    def emit_many(self, records: list[Any]) -> None:
        self.emitted.extend(records)

    def note(self, what: str, why: str) -> None:
        self.notes.append((what, why))


def test_moved_inputs_are_recorded_with_the_stacks_kept_and_stacks_kept_from_then_on() -> None:
    recorder = Recorder(Memory())
    guarded.record_moved(recorder, MESSAGE, [])  # type: ignore[arg-type]
    rows = [(r.source, r.addr, r.stack, r.shape) for r in recorder.emitted]
    assert all(isinstance(r, sr.GuardedTensor) for r in recorder.emitted)
    assert rows == [("arg0_1", 8192, -1, []), ("arg1_1", 16384, 7, [])]
    assert recorder.memory.watched == ["the first static input that moved"]


def test_another_message_records_nothing() -> None:
    recorder = Recorder(Memory())
    guarded.record_moved(recorder, "Recording function=forward", [])  # type: ignore[arg-type]
    assert recorder.emitted == [] and recorder.memory.watched == []


def test_an_error_of_its_own_is_noted_not_raised() -> None:
    recorder = Recorder(Memory(broken=True))
    guarded.record_moved(recorder, MESSAGE, [])  # type: ignore[arg-type]
    assert recorder.emitted == []
    assert recorder.notes == [("tensors named by recompiles and re-recordings",
                               "RuntimeError('snapshot failed')")]

