"""A compiled function's calls under CUDAGraph Trees, on the CPU: each call's host time kept,
its GPU time taken for a sample, and a call that replays its graph said to, whichever lane
the replay took. The tree manager, its graph and the GPU timer are stood in for (no GPU
here); ``tests/gpu`` and the ``compile_*`` recordings show the same on a GPU."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")

from graphdoctor.record.capture.replay_path import LOG_ATTR, ReplayPath  # noqa: E402
from graphdoctor.record.compile import compiled  # noqa: E402
from graphdoctor.record.compile.call_lane import CallLane  # noqa: E402
from graphdoctor.record.device import gpu_sample  # noqa: E402
from graphdoctor.record.device.gpu_sample import TIMED_FIRST  # noqa: E402
from graphdoctor.record.recorder import Recorder  # noqa: E402
from graphdoctor.trace.assemble import assemble_file  # noqa: E402
from graphdoctor.trace.event_kinds import NONE  # noqa: E402
from graphdoctor.trace.names import REPLAYING_CALL  # noqa: E402
from graphdoctor.trace.spool.file import SpoolWriter  # noqa: E402

from .test_replay_path import GPU_NS, ID, Graph, Hooks, Timer, original  # noqa: E402

CALLS = 300


class TreeManager:
    """Stands in for CUDAGraphTreeManager: each call of function 0 replays one graph."""

    id_to_compile_id = {0: "0/0"}

    def __init__(self, replay: Any) -> None:
        self.graph, self.replay = Graph(4), replay

    def run(self, new_inputs: Any, function_id: Any) -> Any:
        self.replay(self.graph)
        return new_inputs


def calls_and_replays(tmp_path: Path) -> tuple[TreeManager, Timer, list[Any], list[Any]]:
    recorder = Recorder(SpoolWriter(str(tmp_path / "run.spool")))
    timer = Timer(recorder)
    recorder.timer = timer  # type: ignore[assignment]
    path = ReplayPath(recorder, Hooks(), ID)
    hooks = compiled._CompileHooks(CallLane(recorder))
    manager = TreeManager(path.wrap(original))
    run = compiled._wrap_tree_run(recorder, hooks, TreeManager.run)
    for _ in range(CALLS):
        run(manager, [], 0)
    hooks.lane.finish()
    path.finish()
    recorder.spool.close()
    tables = assemble_file(tmp_path / "run.spool").tables
    return manager, timer, list(tables["calls"]), list(tables["replays"])


def test_a_compiled_loop_s_replays_take_the_fast_lane_and_its_calls_say_they_replayed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpu_sample, "TIMED_GAP_NS", 10**15)  # no call or replay is late
    manager, timer, calls, replays = calls_and_replays(tmp_path)
    assert LOG_ATTR in manager.graph.__dict__  # the fast lane took the replays after the first
    assert len(calls) == len(replays) == CALLS == manager.graph.replays
    assert [c.mode for c in calls] == [REPLAYING_CALL] * CALLS  # each call replayed
    # timed on the GPU: the first calls and replays of each, the rest on the host only
    assert timer.started == 2 * TIMED_FIRST
    assert [c.gpu for c in calls[:TIMED_FIRST]] == [GPU_NS] * TIMED_FIRST
    assert all(c.gpu == NONE for c in calls[TIMED_FIRST:]) and all(c.dur >= 0 for c in calls)


def test_a_compiled_call_is_timed_on_the_gpu_whenever_the_gap_has_passed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpu_sample, "TIMED_GAP_NS", 0)  # every one is late enough
    monkeypatch.setattr(gpu_sample, "TIMED_EVERY", 0)
    _, timer, calls, replays = calls_and_replays(tmp_path)
    assert timer.started == 2 * CALLS
    assert all(c.gpu == GPU_NS for c in calls) and all(r.gpu == GPU_NS for r in replays)


def test_a_new_tree_manager_s_function_ids_name_its_own_compiles(tmp_path: Path) -> None:
    """After ``torch._dynamo.reset()`` a new manager numbers its functions from 0 again: its
    function 0 is its own compile, not the old manager's."""
    recorder = Recorder(SpoolWriter(str(tmp_path / "run.spool")))
    path = ReplayPath(recorder, Hooks(), ID)
    run = compiled._wrap_tree_run(recorder, compiled._CompileHooks(CallLane(recorder)),
                                  TreeManager.run)
    old, new = TreeManager(path.wrap(original)), TreeManager(path.wrap(original))
    new.id_to_compile_id = {0: "1/0"}
    run(old, [], 0)
    run(new, [], 0)
    path.finish()
    recorder.spool.close()
    calls = assemble_file(tmp_path / "run.spool").tables["calls"]
    assert len({c.fn for c in calls}) == 2  # one compiled function per dynamo frame id
