"""The driver-event timer (``--cupti``'s GPU time of eager calls) against a stand-in for
libcuda's event calls: pairs read back only once complete, never inside a capture, and a
call it cannot time counted, not guessed. On a GPU, the cupy_* fixtures check its numbers
against the scripts' own CUDA events."""

from __future__ import annotations

from typing import Any

from graphdoctor.record.device.driver_timer import INVALID_CONTEXT, DriverEventTimer
from graphdoctor.record.recorder import CaptureState, Recorder
from graphdoctor.trace.event_kinds import Call
from graphdoctor.trace.spool.file import SpoolWriter


class Events:
    """libcuda's event calls: each event holds the GPU clock when recorded, and completes
    when ``finish`` says so."""

    def __init__(self, context: bool = True) -> None:
        self.context, self.clock, self.made = context, 0, 0
        self.context_here = True  # a context is current on the calling thread
        self.at: dict[int, int] = {}
        self.finished: set[int] = set()
        self.refuse: set[int] = set()  # events the driver will not record
        self.synchronized = 0

    def new_event(self) -> int | None:
        if not self.context:
            return None
        self.made += 1
        return self.made

    def record(self, event: int, stream: int) -> int:
        if not self.context_here:
            return INVALID_CONTEXT
        self.at[event] = self.clock
        return 999 if event in self.refuse else 0

    def done(self, event: int) -> bool:
        return event in self.finished

    def elapsed_ms(self, start: int, end: int) -> float:
        return (self.at[end] - self.at[start]) / 1e6

    def synchronize(self) -> None:
        self.synchronized += 1
        self.finished |= set(self.at)


def timer(events: Events) -> tuple[DriverEventTimer, Recorder, list[Any]]:
    recorder = Recorder(SpoolWriter("/dev/null"))
    emitted: list[Any] = []
    recorder.emit = emitted.append  # type: ignore[method-assign]
    recorder.emit_many = emitted.extend  # type: ignore[method-assign,assignment]
    return DriverEventTimer(recorder, events, lambda: 0x1000), recorder, emitted


def call(t: int) -> Call:
    return Call(t, 10, -1, 0, "eager", -1)


def test_a_pair_is_read_only_once_its_end_has_completed() -> None:
    events = Events()
    clock, recorder, emitted = timer(events)
    token = clock.start()
    assert token is not None and token[3] == 0x1000  # the capture's stream: no framework
    events.clock += 250_000
    clock.stop(token, call(1))
    clock.resolve()
    assert emitted == []  # still running on the GPU: nothing read, nothing waited for
    events.finished.add(token[1])
    clock.resolve()
    assert [row.gpu for row in emitted] == [250_000]
    assert events.synchronized == 0


def test_the_end_of_the_run_waits_once_for_the_rest() -> None:
    events = Events()
    clock, _, emitted = timer(events)
    for t in range(3):
        token = clock.start()
        assert token is not None
        events.clock += 1_000
        clock.stop(token, call(t))
    clock.resolve(wait=True)
    assert [row.gpu for row in emitted] == [1_000] * 3 and events.synchronized == 1


def test_nothing_is_recorded_inside_a_capture_and_it_is_counted() -> None:
    events = Events()
    clock, recorder, emitted = timer(events)
    recorder.captures[1] = CaptureState(0, 0x1000, "", "stream capture (runtime)", -1)
    assert clock.start() is None and events.at == {} and clock.untimed == 1


def test_before_the_script_uses_the_gpu_nothing_is_timed_or_counted() -> None:
    clock, _, _ = timer(Events(context=False))
    assert clock.start() is None and clock.untimed == 0  # as torch's timer before CUDA is up


def test_a_thread_with_no_context_current_has_nothing_to_time() -> None:
    """CUPTI's buffer thread and graphdoctor's own run Python the eager history sees; they
    launch no GPU work, and the driver says so (no context current): not a call untimed."""
    events = Events()
    clock, _, _ = timer(events)
    token = clock.start()
    assert token is not None  # the events exist: made on the script's thread
    events.context_here = False
    assert clock.start() is None and clock.untimed == 0


def test_an_end_the_driver_refuses_leaves_its_call_untimed_not_wrong() -> None:
    events = Events()
    clock, _, emitted = timer(events)
    token = clock.start()
    assert token is not None
    events.refuse.add(token[1])
    clock.stop(token, call(7))
    assert [(row.t, row.gpu) for row in emitted] == [(7, -1)] and clock.untimed == 1
    assert clock.start() is not None  # its pair is free again
