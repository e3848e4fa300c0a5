"""The replay path on the CPU: which replays are timed on the GPU, and that every replay
still reaches the trace, its host time kept. The graph and the GPU timer are stood in for
(no GPU here); the GPU recordings under fixtures/ and bench/overhead.py's tiny replay loop
show the same on a GPU."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

pytest.importorskip("torch")

from graphdoctor.record.capture.inputs import GraphInputs  # noqa: E402
from graphdoctor.record.capture.replay_path import LOG_ATTR, ReplayPath  # noqa: E402
from graphdoctor.record.device import gpu_sample  # noqa: E402
from graphdoctor.record.device.gpu_sample import TIMED_FIRST  # noqa: E402
from graphdoctor.record.recorder import Recorder  # noqa: E402
from graphdoctor.trace.assemble import assemble, assemble_file  # noqa: E402
from graphdoctor.trace.event_kinds import NONE  # noqa: E402
from graphdoctor.trace.spool.file import SpoolWriter  # noqa: E402
from graphdoctor.trace.spool.records import REPLAY_RUN_MAX  # noqa: E402

ID = "_test_graph_id"
STREAM = 77  # the stream handle the stand-in timer reports
GPU_NS = 5_000


class Timer:
    """Stands in for the CUDA event timer: a token per start, the row emitted timed."""

    untimed = 0

    def __init__(self, recorder: Recorder):
        self.recorder, self.started = recorder, 0

    def start(self) -> Any:
        self.started += 1
        return (None, None, None, STREAM)

    def stop(self, token: Any, row: Any) -> None:
        self.recorder.emit(row._replace(gpu=GPU_NS))


class Hooks:
    """What the graphs source gives the replay path."""

    def __init__(self) -> None:
        self.watched: dict[int, GraphInputs] = {}
        self.shared_pool: set[int] = set()
        self.kernel_timer = None
        self.last_sample_ns = 0
        self.samples: list[int] = []

    def sampled(self, graph: int, count: int, caller: FrameType) -> None:
        self.last_sample_ns = time.perf_counter_ns()
        self.samples.append(count)


class Graph:
    def __init__(self, gid: int, fail_at: int = 0) -> None:
        setattr(self, ID, gid)
        self.replays, self.fail_at = 0, fail_at


def original(graph: Graph) -> None:
    graph.replays += 1
    if graph.replays == graph.fail_at:
        raise RuntimeError("CUDA error: an illegal memory access was encountered")


def recording(tmp_path: Path) -> tuple[Recorder, Timer, Hooks, ReplayPath]:
    recorder = Recorder(SpoolWriter(str(tmp_path / "run.spool")))
    timer = Timer(recorder)
    recorder.timer = timer  # type: ignore[assignment]
    hooks = Hooks()
    return recorder, timer, hooks, ReplayPath(recorder, hooks, ID)


def replays_of(tmp_path: Path, recorder: Recorder, path: ReplayPath) -> list[Any]:
    path.finish()
    recorder.spool.close()
    return list(assemble_file(tmp_path / "run.spool").tables["replays"])


def test_the_first_replays_are_timed_then_a_sample_and_every_one_is_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpu_sample, "TIMED_GAP_NS", 10**15)  # no replay is late enough
    recorder, timer, hooks, path = recording(tmp_path)
    replay, graph = path.wrap(original), Graph(3)
    for _ in range(200):
        replay(graph)
    assert graph.replays == 200 and timer.started == TIMED_FIRST
    # the fast lane keeps no count of its own: the writer brings the recorder's up to date
    assert recorder.replays == {3: TIMED_FIRST}
    path.heartbeat()
    assert recorder.replays == {3: 200}
    # memory and frozen values, in the general lane, from the 2nd replay on (the 1st is the
    # one a program racing two graphs launches the other one right after)
    assert hooks.samples == [2, 4, 8, 16]
    graph.__dict__[LOG_ATTR].due = 0  # a sample falls due: the next one takes the general lane
    replay(graph)
    assert hooks.samples[-1] == 201  # the count passed 32, 64 and 128 since the last look
    rows = replays_of(tmp_path, recorder, path)
    assert len(rows) == 201 and {r.graph for r in rows} == {3}
    timed = [r for r in rows if r.gpu >= 0]
    assert len(timed) == TIMED_FIRST and all(r.gpu == GPU_NS for r in timed)
    assert all(r.gpu == NONE and r.dur > 0 for r in rows[TIMED_FIRST:])
    assert {r.stream for r in rows} == {STREAM}  # the untimed ones take the last timed one's
    starts = [r.t for r in rows]
    assert starts == sorted(starts) and len(set(starts)) == 201


def test_a_replay_late_after_the_last_timed_one_is_timed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpu_sample, "TIMED_GAP_NS", 0)  # every replay is late enough
    monkeypatch.setattr(gpu_sample, "TIMED_EVERY", 0)
    recorder, timer, _, path = recording(tmp_path)
    replay = path.wrap(original)
    for _ in range(TIMED_FIRST + 10):
        replay(Graph(0))
    assert timer.started == TIMED_FIRST + 10


def test_a_replay_that_raises_is_recorded_and_raises(tmp_path: Path) -> None:
    recorder, _, _, path = recording(tmp_path)
    replay, graph = path.wrap(original), Graph(1, fail_at=TIMED_FIRST + 5)
    with pytest.raises(RuntimeError, match="illegal memory access"):
        for _ in range(TIMED_FIRST + 10):
            replay(graph)
    path.finish()
    recorder.spool.close()
    trace = assemble_file(tmp_path / "run.spool")
    [error] = trace.exceptions
    assert error.graph == 1 and "illegal memory access" in error.chain[0].message
    assert len(trace.tables["replays"]) == TIMED_FIRST + 4 == recorder.replays[1]


def test_replays_on_threads_are_kept_apart_and_a_flush_from_another_thread_loses_none(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpu_sample, "TIMED_GAP_NS", 10**15)
    recorder, _, _, path = recording(tmp_path)
    replay, stop, together = path.wrap(original), threading.Event(), threading.Barrier(2)

    def flushing() -> None:  # the spool's flushing thread, at full speed
        while not stop.is_set():
            path.heartbeat()

    def replaying(gid: int) -> None:
        graph = Graph(gid)
        together.wait()  # both alive at once: two threads, not one ident used twice
        for _ in range(3000):
            replay(graph)

    flusher = threading.Thread(target=flushing)
    flusher.start()
    workers = [threading.Thread(target=replaying, args=(gid,)) for gid in (0, 1)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    stop.set()
    flusher.join()
    rows = replays_of(tmp_path, recorder, path)
    assert [len([r for r in rows if r.graph == gid]) for gid in (0, 1)] == [3000, 3000]
    threads = [{r.thread for r in rows if r.graph == gid} for gid in (0, 1)]
    assert len(threads[0]) == len(threads[1]) == 1 and threads[0] != threads[1] and \
        0 not in threads[0] | threads[1]  # neither is the main thread


def test_a_stranger_s_run_of_replays_is_read_as_written_or_not_at_all() -> None:
    good = ["replay_run", 2, 0, 9, 1000, [0, 10, 20], [3, 4, 5]]
    trace = assemble([good])
    assert [(r.t, r.dur, r.gpu, r.graph, r.stream) for r in trace.tables["replays"]] == [
        (1000, 3, NONE, 2, 9), (1010, 4, NONE, 2, 9), (1030, 5, NONE, 2, 9)]
    bad = [["replay_run", 2, 0, 9, 1000, [0, 10], [3]],  # lengths differ
           ["replay_run", 2, 0, 9, 1000, [0, -10], [3, 4]],  # back in time
           ["replay_run", 2, 0, 9, 1000, ["x"], [3]],  # not a number
           ["replay_run", 2, 0, 9, 1000, [1] * (REPLAY_RUN_MAX + 1),
            [1] * (REPLAY_RUN_MAX + 1)]]  # longer than any the recorder writes
    trace = assemble(bad)
    assert len(trace.tables["replays"]) == 0
    assert "4 spool records could not be read" in [n.why for n in trace.meta.not_recorded]


def test_a_timer_that_declines_is_not_asked_again_at_every_replay(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A profiler of the script's, or a capture on another thread: the timer takes no
    events then, and the replays after it go the cheap way until the gap has passed."""
    monkeypatch.setattr(gpu_sample, "TIMED_GAP_NS", 10**15)
    recorder, timer, _, path = recording(tmp_path)
    monkeypatch.setattr(timer, "start", lambda: None)
    asked = []
    timed = path._timed
    monkeypatch.setattr(path, "_timed", lambda *a: asked.append(1) or timed(*a))
    replay = path.wrap(original)
    for _ in range(100):
        replay(Graph(0))
    rows = replays_of(tmp_path, recorder, path)
    assert len(asked) == TIMED_FIRST and len(rows) == 100 and all(r.gpu == NONE for r in rows)


def test_a_graph_captured_again_counts_anew_and_a_finished_recording_logs_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast lane's log belongs to one capture: captured again (a new id), the replays
    are the new graph's, and what the old one logged is written under the old id. Once the
    recording ends, a replay method the script still holds keeps nothing."""
    monkeypatch.setattr(gpu_sample, "TIMED_GAP_NS", 10**15)
    recorder, _, _, path = recording(tmp_path)
    replay, graph = path.wrap(original), Graph(5)
    for _ in range(40):
        replay(graph)
    assert LOG_ATTR in graph.__dict__  # its fast lane is open
    setattr(graph, ID, 6)
    path.forget(graph)
    for _ in range(30):
        replay(graph)
    path.finish()
    assert recorder.replays == {5: 40, 6: 30}
    log = graph.__dict__[LOG_ATTR]
    for _ in range(50):
        replay(graph)
    assert log.held() == 0 and graph.replays == 120
    recorder.spool.close()
    rows = list(assemble_file(tmp_path / "run.spool").tables["replays"])
    assert [len([r for r in rows if r.graph == gid]) for gid in (5, 6)] == [40, 30]


def test_a_graph_served_from_another_thread_moves_its_fast_lane_there(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Warmed up on the main thread, then replayed from a worker: the worker's first timed
    replay moves the lane, so its replays are fast again and kept under its own thread."""
    monkeypatch.setattr(gpu_sample, "TIMED_GAP_NS", 10**15)
    recorder, _, _, path = recording(tmp_path)
    replay, graph = path.wrap(original), Graph(2)
    for _ in range(20):
        replay(graph)

    def serving() -> None:
        path.due.clear()  # this one is due: timed
        replay(graph)
        for _ in range(99):
            replay(graph)

    worker = threading.Thread(target=serving)
    worker.start()
    worker.join()
    assert graph.__dict__[LOG_ATTR].owner == worker.ident
    assert graph.__dict__[LOG_ATTR].held() >= 97  # the fast lane took the worker's
    rows = replays_of(tmp_path, recorder, path)
    threads = [r.thread for r in sorted(rows, key=lambda r: r.t)]
    assert len(rows) == 120 == recorder.replays[2]
    assert len(set(threads[:20])) == 1 and len(set(threads[20:])) == 1 \
        and threads[0] != threads[20]


def test_a_long_fast_lane_log_is_written_at_the_graph_s_next_timed_replay(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the fast lane holds is bounded: a loop of microsecond replays logs a thousand a
    millisecond, and its next timed replay writes them once there are REPLAY_RUN_MAX (not
    only where the count passes a power of two, as the 16,385th replay's does here)."""
    monkeypatch.setattr(gpu_sample, "TIMED_GAP_NS", 10**15)
    recorder, _, _, path = recording(tmp_path)
    replay, graph = path.wrap(original), Graph(8)
    log = None
    for count in (2**14 + 1, REPLAY_RUN_MAX - 1, 3):
        for _ in range(count - 1):
            replay(graph)
        log = graph.__dict__[LOG_ATTR]
        log.due = 0  # a millisecond went by: the next replay is timed
        replay(graph)
        if count == REPLAY_RUN_MAX - 1:
            assert log.held() == REPLAY_RUN_MAX - 2  # short of the bound: kept
    assert log is not None and log.held() == 0  # the bound held: written
    replays = 2**14 + REPLAY_RUN_MAX + 3
    assert recorder.replays[8] == replays == len(replays_of(tmp_path, recorder, path))
