"""The recipe graphdoctor.check follows, on a stand-in for torch.cuda: warm-up on a side
stream (not the eager baseline), one capture, the replays, then as many eager calls when the
recorder can time them; a failed capture is not raised and leaves the caller's stream
current. The real thing runs in tests/gpu/test_api_gpu.py."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("torch")

from graphdoctor.errors import NoCudaDevice  # noqa: E402
from graphdoctor.record import exercise  # noqa: E402
from graphdoctor.record.recorder import Recorder  # noqa: E402
from graphdoctor.trace.spool import SpoolWriter  # noqa: E402


class FakeStream:
    def __init__(self, name: str, events: list[str]):
        self.name, self._events = name, events

    def wait_stream(self, other: FakeStream) -> None:
        self._events.append(f"{self.name} waits for {other.name}")


class FakeCuda:
    """What exercise asks of torch.cuda, writing down what happens in order."""

    def __init__(self, capture_fails: bool = False):
        self.events: list[str] = []
        self.default = FakeStream("default", self.events)
        self.current = self.default
        self.capture_fails = capture_fails

    def is_available(self) -> bool:
        return True

    def is_initialized(self) -> bool:
        return True

    def current_stream(self) -> FakeStream:
        return self.current

    def set_stream(self, stream: FakeStream) -> None:
        self.events.append(f"set_stream {stream.name}")
        self.current = stream

    def Stream(self) -> FakeStream:  # noqa: N802 - torch's name
        return FakeStream("side", self.events)

    @contextmanager
    def stream(self, stream: FakeStream) -> Iterator[None]:
        self.events.append(f"on {stream.name}")
        yield
        self.events.append(f"off {stream.name}")

    def CUDAGraph(self) -> Any:  # noqa: N802 - torch's name
        return SimpleNamespace(replay=lambda: self.events.append("replay"))

    @contextmanager
    def graph(self, graph: Any) -> Iterator[None]:
        self.events.append("capture")
        before, self.current = self.current, FakeStream("capture", self.events)
        yield
        if self.capture_fails:  # as torch's: capture_end raises, the stream stays
            raise RuntimeError("operation not permitted when stream is capturing")
        self.current = before


@pytest.fixture
def recorder(tmp_path: Any) -> Iterator[Recorder]:
    spool = SpoolWriter(str(tmp_path / "s.spool"))
    yield Recorder(spool)
    spool.close()


def run_with(cuda: FakeCuda, recorder: Recorder, monkeypatch: pytest.MonkeyPatch,
             followed: bool) -> list[str]:
    monkeypatch.setattr(exercise, "torch", SimpleNamespace(cuda=cuda))
    monkeypatch.setattr(exercise.compat, "cuda_built", lambda: True)
    monkeypatch.setattr(exercise.compat, "synchronize_unpatched",
                        lambda: cuda.events.append("wait"))
    recorder.follow = lambda fn: followed

    def step(x: int) -> None:
        cuda.events.append("warm-up call" if recorder.in_warmup else "call")

    exercise.run(recorder, step, (1,), {}, warmup=2, replays=3)
    return cuda.events


def test_warm_up_capture_replays_and_the_eager_baseline(
        recorder: Recorder, monkeypatch: pytest.MonkeyPatch) -> None:
    events = run_with(FakeCuda(), recorder, monkeypatch, followed=True)
    assert events == ["side waits for default", "on side", "warm-up call", "warm-up call",
                      "off side", "default waits for side", "capture", "call",
                      "replay", "replay", "replay", "call", "call", "call", "wait"]
    assert not recorder.in_warmup


def test_no_eager_calls_where_the_recorder_cannot_time_them(
        recorder: Recorder, monkeypatch: pytest.MonkeyPatch) -> None:
    events = run_with(FakeCuda(), recorder, monkeypatch, followed=False)
    assert events[-5:] == ["call", "replay", "replay", "replay", "wait"]


def test_a_failed_capture_is_not_raised_and_gives_the_stream_back(
        recorder: Recorder, monkeypatch: pytest.MonkeyPatch) -> None:
    cuda = FakeCuda(capture_fails=True)
    events = run_with(cuda, recorder, monkeypatch, followed=True)
    assert events[-3:] == ["capture", "call", "set_stream default"]
    assert cuda.current is cuda.default


def test_without_cuda_nothing_runs(recorder: Recorder, monkeypatch: pytest.MonkeyPatch) -> None:
    cuda = FakeCuda()
    monkeypatch.setattr(cuda, "is_available", lambda: False)
    with pytest.raises(NoCudaDevice):
        run_with(cuda, recorder, monkeypatch, followed=True)
    assert cuda.events == []
