"""The event timer's spans between a graph's timed replays, on the CPU: CUDA's events are
stood in for by a clock (a GPU recording, `tiny_graph`, shows them from real events)."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("torch")

from graphdoctor.record.device import timing  # noqa: E402
from graphdoctor.record.device.timing import EventTimer  # noqa: E402
from graphdoctor.record.recorder import Recorder  # noqa: E402
from graphdoctor.trace.event_kinds import NONE, Call, Replay  # noqa: E402
from graphdoctor.trace.spool.file import SpoolWriter  # noqa: E402
from graphdoctor.trace.spool.records import ReplaySpan  # noqa: E402


class Clock:
    """The GPU's clock: an event holds the time it was recorded at, in ns."""

    def __init__(self) -> None:
        self.now = 0

    def record(self, event: dict[str, int], stream: Any) -> None:
        event["at"] = self.now

    @staticmethod
    def elapsed(start: dict[str, int], end: dict[str, int]) -> float:
        return (end["at"] - start["at"]) / 1e6  # milliseconds, as CUDA's events give


def timer(monkeypatch: pytest.MonkeyPatch) -> tuple[EventTimer, Clock, list[Any]]:
    recorder = Recorder(SpoolWriter("/dev/null"))
    emitted: list[Any] = []
    monkeypatch.setattr(recorder, "emit_many", emitted.extend)
    clock = Clock()
    monkeypatch.setattr(timing.compat, "unpatched_event_methods",
                        lambda: (clock.record, lambda event: True, clock.elapsed))
    monkeypatch.setattr(timing.compat, "CurrentStream", lambda: lambda: (None, 7))
    monkeypatch.setattr(timing.compat, "ProfilerActive", lambda: lambda: False)
    events = EventTimer(recorder)
    monkeypatch.setattr(events, "_new_pair", lambda: ({}, {}))
    return events, clock, emitted


def timed(events: EventTimer, clock: Clock, row: Any, gpu: int) -> None:
    token = events.start()
    assert token is not None
    clock.now += gpu
    events.stop(token, row)


def test_a_graph_s_timed_replays_give_the_gpu_time_between_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    events, clock, emitted = timer(monkeypatch)
    timed(events, clock, Replay(100, 5, NONE, 3, 7, 0), 8_000)  # a lone replay: 8 µs
    clock.now += 100 * 4_200  # a hundred replays back to back, untimed
    timed(events, clock, Call(150, 5, NONE, 1, "eager", -1), 20_000)  # a call: no span
    timed(events, clock, Replay(200, 5, NONE, 3, 7, 0), 4_200)
    timed(events, clock, Replay(300, 5, NONE, 4, 7, 0), 1_000)  # another graph: its own
    timed(events, clock, Replay(400, 5, NONE, NONE, 7, 0), 1_000)  # captured before: none
    timed(events, clock, Replay(500, 5, NONE, NONE, 7, 0), 1_000)
    events.resolve()
    spans = [r for r in emitted if isinstance(r, ReplaySpan)]
    assert spans == [ReplaySpan(3, 100, 200, 100 * 4_200 + 20_000 + 4_200)]
    assert [r.gpu for r in emitted if isinstance(r, Replay)] == [8_000, 4_200] + [1_000] * 3


def test_no_span_across_streams_and_a_kept_pair_is_reused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    events, clock, emitted = timer(monkeypatch)
    timed(events, clock, Replay(100, 5, NONE, 3, 7, 0), 1_000)
    monkeypatch.setattr(events, "_stream", lambda: (None, 8))
    timed(events, clock, Replay(200, 5, NONE, 3, 8, 0), 1_000)  # on another stream
    events.resolve()
    assert not [r for r in emitted if isinstance(r, ReplaySpan)]
    assert len(events._free) == 1  # the first replay's pair, given back when the second came
