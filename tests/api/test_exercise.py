"""The recipe graphdoctor.check follows, on a stand-in for torch.cuda: warm-up on a side
stream (not the eager baseline), one capture, the replays, then as many eager calls when the
recorder can time them; a failed capture is not raised, and what it leaves behind is given
back. The stand-in fails a capture as torch 2.11 does (seen on an H100): the capture stream
left current, the device's generator left in capture mode (every later random op raises),
the allocator left routing to the capture's pool, a capture left open when the captured code
switched streams. The real thing runs in tests/gpu/test_api_gpu.py."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("torch")

from graphdoctor.errors import NoCudaDevice  # noqa: E402
from graphdoctor.record import exercise  # noqa: E402
from graphdoctor.record.recorder import Recorder  # noqa: E402
from graphdoctor.trace.spool.file import SpoolWriter  # noqa: E402

STUCK = "Offset increment outside graph capture encountered unexpectedly."
INVALIDATED = "operation failed due to a previous error during capture"
OTHER_STREAM = "Capture must end on the same stream it began on."


class FakeStream:
    def __init__(self, name: str, events: list[str]):
        self.name, self._events = name, events
        self.capturing = False

    def wait_stream(self, other: FakeStream) -> None:
        self._events.append(f"{self.name} waits for {other.name}")


class FakeGenerator:
    """The device's default CUDA generator as torch up to 2.11 keeps it: a seed, an offset,
    and a capture mode that capture_begin turns on and only a capture that ends turns off."""

    def __init__(self) -> None:
        self.seed, self.offset, self.capturing = 7, 0, False

    def state(self) -> tuple[int, int]:
        return (self.seed, self.offset)


class FakeCuda:
    """What exercise asks of torch.cuda, writing down what happens in order. ``fails`` says
    how the capture fails: None (it does not), "invalidated" (an ``.item()`` inside it: the
    capture ends, capture_end raises), "other stream" (the captured code leaves another
    stream current: capture_end raises before it ends the capture)."""

    def __init__(self, fails: str | None = None):
        self.events: list[str] = []
        self.default = FakeStream("default", self.events)
        self.current = self.default
        self.fails = fails
        self.generator = FakeGenerator()
        self.routing: list[tuple[int, int]] = []  # pools the allocator routes allocations to
        self.open: dict[int, tuple[FakeStream, tuple[int, int]]] = {}  # graph -> capture
        self.invalidated: set[int] = set()  # graphs whose capture an .item() broke
        self.capture_stream = self.default
        self._pools = itertools.count(1)

    def is_available(self) -> bool:
        return True

    def is_initialized(self) -> bool:
        return True

    def current_stream(self) -> FakeStream:
        return self.current

    def current_device(self) -> int:
        return 0

    def set_stream(self, stream: FakeStream) -> None:
        self.events.append(f"set_stream {stream.name}")
        self.current = stream

    def Stream(self) -> FakeStream:  # noqa: N802 - torch's name
        return FakeStream("side", self.events)

    @contextmanager
    def stream(self, stream: FakeStream) -> Iterator[None]:
        self.events.append(f"on {stream.name}")
        before, self.current = self.current, stream
        yield
        self.events.append(f"off {stream.name}")
        self.current = before

    def is_current_stream_capturing(self) -> bool:
        return self.current.capturing

    def graph_pool_handle(self) -> tuple[int, int]:
        return (0, next(self._pools))

    def get_rng_state_all(self) -> list[tuple[int, int]]:
        return [self.generator.state()]

    def set_rng_state_all(self, states: list[tuple[int, int]]) -> None:
        (self.generator.seed, self.generator.offset), = states

    def random(self) -> None:
        """A random op (torch.randn): it moves the offset, or raises where torch 2.11 does."""
        if not self.current.capturing:
            if self.generator.capturing:
                raise RuntimeError(STUCK)
            self.generator.offset += 4

    def CUDAGraph(self) -> Any:  # noqa: N802 - torch's name
        return SimpleNamespace(replay=lambda: self.events.append("replay"),
                               reset=lambda: self.events.append("reset"))

    def capture_begin(self, graph: Any, pool: tuple[int, int] | None) -> None:
        assert self.current is not self.default, "captures need a side stream"
        self.generator.capturing = True  # torch 2.11: the generator's capture_prologue
        pool = pool or self.graph_pool_handle()
        self.routing.append(pool)
        self.current.capturing = True
        self.open[id(graph)] = (self.current, pool)

    def capture_end(self, graph: Any) -> None:
        stream, pool = self.open[id(graph)]
        if self.current is not stream:
            raise RuntimeError(OTHER_STREAM)  # before anything ends
        del self.open[id(graph)]
        stream.capturing = False  # cudaStreamEndCapture ends it, failed or not
        if id(graph) in self.invalidated:
            raise RuntimeError(INVALIDATED)  # before the allocator's and generator's ends
        self.routing.remove(pool)
        self.generator.capturing = False  # the generator's capture_epilogue

    @contextmanager
    def graph(self, graph: Any, pool: tuple[int, int], stream: FakeStream) -> Iterator[None]:
        """torch.cuda.graph: its stream made current, capture_begin, the block, capture_end,
        the stream given back; when capture_end raises, the capture stream stays current."""
        self.events.append(f"capture on {stream.name}")
        before, self.current, self.capture_stream = self.current, stream, stream
        self.capture_begin(graph, pool)
        yield
        if self.fails == "invalidated":
            self.invalidated.add(id(graph))
        elif self.fails == "other stream":
            self.current = FakeStream("other", self.events)
        self.capture_end(graph)
        self.current = before

    def native_class(self) -> Any:
        """torch._C._CUDAGraph: its capture_end also ends a torch.cuda.CUDAGraph's capture."""
        cuda = self

        class Native:
            def capture_begin(self, pool: Any, capture_error_mode: str) -> None:
                cuda.events.append(f"native capture on {cuda.current.name} ({capture_error_mode})")
                cuda.capture_begin(self, pool)

            def capture_end(self) -> None:
                cuda.events.append("native capture_end")
                cuda.capture_end(self)

            def reset(self) -> None:
                cuda.events.append("native reset")

        return Native

    def empty(self, size: int, device: str) -> Any:
        return SimpleNamespace(zero_=lambda: self.events.append("fill"))


@pytest.fixture
def recorder(tmp_path: Any) -> Iterator[Recorder]:
    spool = SpoolWriter(str(tmp_path / "s.spool"))
    yield Recorder(spool)
    spool.close()


def run_with(cuda: FakeCuda, recorder: Recorder, monkeypatch: pytest.MonkeyPatch,
             followed: bool, *, random: bool = False) -> list[str]:
    monkeypatch.setattr(exercise, "torch", SimpleNamespace(cuda=cuda, empty=cuda.empty))
    monkeypatch.setattr(exercise.compat, "cuda_built", lambda: True)
    monkeypatch.setattr(exercise.compat, "synchronize_unpatched",
                        lambda: cuda.events.append("wait"))
    monkeypatch.setattr(exercise.compat, "unpatched_graph_class", cuda.native_class)
    monkeypatch.setattr(exercise.compat, "end_allocate_to_pool", lambda device, pool: (
        cuda.events.append(f"end routing to {pool}") or cuda.routing.remove(pool) or True
        if pool in cuda.routing else False))
    recorder.follow = lambda fn: followed

    def step(x: int) -> None:
        cuda.events.append("warm-up call" if recorder.in_warmup else "call")
        if random:
            cuda.random()

    exercise.run(recorder, step, (1,), {}, warmup=2, replays=3)
    return cuda.events


def left_as_found(cuda: FakeCuda) -> None:
    """What the caller finds after check(): its stream, no capture open, no pool routed to,
    the generator out of capture mode at the seed and offset it had, random ops working."""
    assert cuda.current is cuda.default
    assert not cuda.open and not cuda.capture_stream.capturing
    assert cuda.routing == []
    assert not cuda.generator.capturing and cuda.generator.state() == (7, 0)
    cuda.random()


def test_warm_up_capture_replays_and_the_eager_baseline(
        recorder: Recorder, monkeypatch: pytest.MonkeyPatch) -> None:
    events = run_with(FakeCuda(), recorder, monkeypatch, followed=True)
    assert events == ["side waits for default", "on side", "warm-up call", "warm-up call",
                      "off side", "default waits for side", "capture on side", "call",
                      "replay", "replay", "replay", "call", "call", "call", "wait"]
    assert not recorder.in_warmup


def test_no_eager_calls_where_the_recorder_cannot_time_them(
        recorder: Recorder, monkeypatch: pytest.MonkeyPatch) -> None:
    events = run_with(FakeCuda(), recorder, monkeypatch, followed=False)
    assert events[-5:] == ["call", "replay", "replay", "replay", "wait"]


def test_a_failed_capture_is_not_raised_and_leaves_the_process_as_it_was(
        recorder: Recorder, monkeypatch: pytest.MonkeyPatch) -> None:
    cuda = FakeCuda(fails="invalidated")
    events = run_with(cuda, recorder, monkeypatch, followed=True, random=True)
    capture = events.index("capture on side")
    assert events[capture:] == [
        "capture on side", "call",
        "set_stream side", "native capture on side (relaxed)", "fill", "native capture_end",
        "native reset", "set_stream default", "end routing to (0, 1)", "reset"]
    left_as_found(cuda)


def test_a_capture_left_open_by_the_captured_code_is_ended(
        recorder: Recorder, monkeypatch: pytest.MonkeyPatch) -> None:
    cuda = FakeCuda(fails="other stream")
    events = run_with(cuda, recorder, monkeypatch, followed=True, random=True)
    capture = events.index("capture on side")
    assert events[capture:] == [
        "capture on side", "call", "set_stream side", "native capture_end",
        "native capture on side (relaxed)", "fill", "native capture_end", "native reset",
        "set_stream default", "reset"]
    left_as_found(cuda)


@pytest.mark.parametrize("fails", ["invalidated", "other stream"])
def test_the_stand_in_fails_as_torch_does_when_nothing_is_given_back(
        recorder: Recorder, monkeypatch: pytest.MonkeyPatch, fails: str) -> None:
    """Without ``_give_back`` the stand-in is left as torch 2.11 leaves the process, which
    is what the tests above find put back."""
    monkeypatch.setattr(exercise, "_give_back", lambda graph, before: None)
    cuda = FakeCuda(fails=fails)
    run_with(cuda, recorder, monkeypatch, followed=True, random=True)
    assert cuda.current is not cuda.default and cuda.routing == [(0, 1)]
    assert cuda.generator.capturing and cuda.generator.state() == (7, 8)  # the warm-up's
    cuda.current = cuda.default
    with pytest.raises(RuntimeError, match=STUCK):
        cuda.random()


def test_without_cuda_nothing_runs(recorder: Recorder, monkeypatch: pytest.MonkeyPatch) -> None:
    cuda = FakeCuda()
    monkeypatch.setattr(cuda, "is_available", lambda: False)
    with pytest.raises(NoCudaDevice):
        run_with(cuda, recorder, monkeypatch, followed=True)
    assert cuda.events == []
