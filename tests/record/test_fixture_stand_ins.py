"""The silent-harm fixtures of fixtures/scripts, run on the CPU with CUDA stood in for: a
graph's capture runs its block eagerly once and its replays do nothing, while the recorder's
watches hear of the capture and of the replays it would sample, as the graphs source tells
them on a GPU. What the scripts' own checks say is not looked at here (replays that do
nothing are stale by construction): only what the watches record. The GPU recordings
(tests/frozen_expectations.py) hold graphdoctor to the scripts' own checks.

Reads through a function's locals need Python 3.12 (``PyFrame_GetVar``); on older Pythons
the scripts whose watches read one get a stand-in for it here that reads ``f_locals`` (which
the recorder itself never does: it would keep a function's locals alive)."""

from __future__ import annotations

import contextlib
import runpy
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from graphdoctor.record import (  # noqa: E402
    compat,
)
from graphdoctor.record.capture import (  # noqa: E402
    kept_outputs,
)
from graphdoctor.record.frozen import (  # noqa: E402
    captured_names,
    frozen_values,
    scalar_uses,
    watches,
)
from graphdoctor.record.frozen.captured_names import FRAME_VAR  # noqa: E402
from graphdoctor.record.recorder import CaptureState, Recorder  # noqa: E402
from graphdoctor.trace.event_kinds import FrozenValue, KeptOutput  # noqa: E402
from graphdoctor.trace.names import (  # noqa: E402
    GRAPH_CONTEXT,
    KEPT_IN_ATTRIBUTE,
    KEPT_IN_LIST,
    USE_BRANCH,
    USE_INDEX,
    USE_MODE,
)
from graphdoctor.trace.spool.file import SpoolWriter, read_records  # noqa: E402
from tests.conftest import ROOT  # noqa: E402

SCRIPTS = ROOT / "fixtures" / "scripts"


def _frame_var(frame: Any, name: str) -> Any:
    try:
        return frame.f_locals[name]
    except KeyError:
        raise NameError(name) from None


@pytest.fixture
def locals_readable(monkeypatch: pytest.MonkeyPatch) -> None:
    """``PyFrame_GetVar`` where this Python has none (before 3.12), for the modules that
    read a function's locals through it."""
    if FRAME_VAR is None:
        for module in (captured_names, scalar_uses, watches):
            monkeypatch.setattr(module, "FRAME_VAR", _frame_var)


class StandIns:
    """CUDA's Python surface for these scripts, on the CPU."""

    def __init__(self, recorder: Recorder):
        self.rec = recorder
        self.graphs = 0

    def graph(self, g: Any, **kwargs: Any) -> Any:
        stand_ins = self

        class Capture:
            def __enter__(self) -> None:
                g.gid = stand_ins.graphs
                stand_ins.graphs += 1
                stand_ins.rec.captures[threading.get_ident()] = CaptureState(
                    g.gid, 0, "", GRAPH_CONTEXT, -1)
                stand_ins.rec.frozen.capture_began(g.gid, sys._getframe(1))

            def __exit__(self, *exc: Any) -> None:
                stand_ins.rec.frozen.capture_ended(g.gid)
                stand_ins.rec.captures.pop(threading.get_ident(), None)

        return Capture()

    def replay(self, g: Any) -> None:
        count = self.rec.replays.get(g.gid, 0) + 1
        self.rec.replays[g.gid] = count
        if count & (count - 1) == 0:  # the 1st, 2nd, 4th...: the replays the recorder samples
            self.rec.frozen.sampled(g.gid, count, sys._getframe(2))  # the script's frame


@contextlib.contextmanager
def cuda_on_the_cpu(monkeypatch: pytest.MonkeyPatch, stand_ins: StandIns) -> Iterator[None]:
    for name in ("randn", "zeros", "ones", "tensor", "empty"):
        original = getattr(torch, name)

        def on_cpu(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
            if str(kwargs.get("device", "")).startswith("cuda"):
                kwargs.pop("device")
            return _original(*args, **kwargs)

        monkeypatch.setattr(torch, name, on_cpu)
    monkeypatch.setattr(torch.Tensor, "cuda", lambda self, *a, **k: self)
    monkeypatch.setattr(torch.nn.Module, "cuda", lambda self, *a, **k: self)
    graph_class = type("CUDAGraph", (), {"replay": lambda g: stand_ins.replay(g)})
    stream = type("Stream", (), {"wait_stream": lambda self, other: None})
    monkeypatch.setattr(torch.cuda, "CUDAGraph", graph_class)
    monkeypatch.setattr(torch.cuda, "graph", stand_ins.graph)
    monkeypatch.setattr(torch.cuda, "Stream", stream)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda *a: stream())
    monkeypatch.setattr(torch.cuda, "stream", lambda s: contextlib.nullcontext())
    monkeypatch.setattr(kept_outputs, "on_gpu", lambda tensor: True)
    monkeypatch.syspath_prepend(str(SCRIPTS))
    yield


def recorded(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    spool = tmp_path / "run.spool"
    recorder = Recorder(SpoolWriter(str(spool)))
    undo = [frozen_values.install(recorder), kept_outputs.install(recorder)]
    try:
        with cuda_on_the_cpu(monkeypatch, StandIns(recorder)):
            runpy.run_path(str(SCRIPTS / f"{name}.py"), run_name="__main__")
        recorder.frozen.finish(dict(recorder.replays))
    finally:
        for step in reversed(undo):
            if step is not None:
                step()
        recorder.spool.close()
    rows = {"frozen": FrozenValue, "kept": KeptOutput}
    return [rows[r[0]](*r[1:]) for r in read_records(str(spool)) if r[0] in rows]


def lines_of(name: str) -> dict[str, int]:
    text = (SCRIPTS / f"{name}.py").read_text().splitlines()
    return {line.strip(): n for n, line in enumerate(text, 1)}


def test_a_training_mode_capture_switched_to_eval(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    rows = recorded("train_mode_captured_then_eval", tmp_path, monkeypatch)
    [mode] = [r for r in rows if isinstance(r, FrozenValue) and r.use == USE_MODE]
    assert (mode.name, mode.owner, mode.captured, mode.value) == (
        "model", "Dropout ×2, BatchNorm1d", "train", "eval")


def test_its_eval_mode_twin_records_nothing(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    assert recorded("eval_mode_capture", tmp_path, monkeypatch) == []


@pytest.mark.usefixtures("locals_readable")
def test_a_python_counter_that_picked_the_buffer(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    rows = recorded("python_counter_picks_buffer", tmp_path, monkeypatch)
    index = [r for r in rows if isinstance(r, FrozenValue) and r.use == USE_INDEX]
    # flipped to 1 before the 2nd replay, seen there; 0 again when the run ended
    assert [(r.name, r.captured, r.value, r.seen, r.replays) for r in index] == [
        ("self.outs[self.slot]", "0", "1", "replay", 1),
        ("self.outs[self.slot]", "0", "0", "end", 16)]


@pytest.mark.usefixtures("locals_readable")
def test_a_graph_per_buffer_records_no_change_a_replay_ran_under(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = recorded("graph_per_buffer", tmp_path, monkeypatch)
    assert all(r.seen == "end" for r in rows if isinstance(r, FrozenValue))


@pytest.mark.usefixtures("locals_readable")
def test_a_branch_flag_set_after_the_capture(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    rows = recorded("branch_flag_after_capture", tmp_path, monkeypatch)
    [branch] = [r for r in rows if isinstance(r, FrozenValue) and r.use == USE_BRANCH]
    assert (branch.name, branch.captured, branch.value) == ("self.calibrate", "False", "True")


def test_a_decode_loop_that_appends_the_output(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    rows = recorded("decode_appends_output", tmp_path, monkeypatch)
    [kept] = [r for r in rows if isinstance(r, KeptOutput)]
    assert (kept.name, kept.holder, kept.how, kept.aliases) == (
        "static_next", "generated", KEPT_IN_LIST, 3)


def test_its_clone_twin_keeps_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = recorded("decode_clones_output", tmp_path, monkeypatch)
    assert not [r for r in rows if isinstance(r, KeptOutput)]


def test_a_previous_output_kept_as_an_attribute(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    rows = recorded("kept_output_previous_step", tmp_path, monkeypatch)
    [kept] = [r for r in rows if isinstance(r, KeptOutput)]
    assert (kept.holder, kept.how) == ("monitor.prev", KEPT_IN_ATTRIBUTE)


pytestmark = pytest.mark.skipif(not compat.storage_weak_refs_available(),
                                reason="this torch has no storage weak references")
