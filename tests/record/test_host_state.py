"""Host state a manual capture froze, watched on the CPU: a module's mode, its hooks and
weights, a Python value that picked a tensor or a branch, torch's switches. The capture is
stood in for (no GPU here): the capture state a real one sets, and the calls the graphs
source makes at its begin, end and sampled replays. The GPU recordings under fixtures/ show
the same end to end."""

from __future__ import annotations

import ast
import runpy
import threading
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from graphdoctor.record.frozen import captured_reads, frozen_values  # noqa: E402
from graphdoctor.record.frozen.host_state import reads_training  # noqa: E402
from graphdoctor.record.recorder import CaptureState, Recorder  # noqa: E402
from graphdoctor.trace.event_kinds import FrozenValue  # noqa: E402
from graphdoctor.trace.names import (  # noqa: E402
    GRAPH_CONTEXT,
    SEEN_AT_CALL,
    SEEN_AT_REPLAY,
    USE_BRANCH,
    USE_HOOKS,
    USE_INDEX,
    USE_MODE,
    USE_WEIGHTS,
)
from graphdoctor.trace.spool.file import SpoolWriter, read_records  # noqa: E402
from tests.record.test_frozen_values import _stack_lines  # noqa: E402

SCRIPT = '''
import sys
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.5),
                            torch.nn.BatchNorm1d(4))
x = torch.ones(2, 4)
class PingPong:
    def __init__(self):
        self.outs = [torch.zeros(2, 4), torch.zeros(2, 4)]
        self.slot = 0
        self.calibrate = False
pp = PingPong()
hooks.begin(sys._getframe())
y = model(x)
pp.outs[pp.slot].copy_(y)
if pp.calibrate:
    y = y * 2
hooks.end()
hooks.replay(1, sys._getframe())
model.eval()
pp.slot ^= 1
pp.calibrate = True
hooks.replay(2, sys._getframe())
handle = model[0].register_forward_hook(lambda m, i, o: None)
model[2].weight = torch.nn.Parameter(torch.ones(4))
hooks.replay(4, sys._getframe())
'''
LINES = {text: n for n, text in enumerate(SCRIPT.splitlines(), 1) if text}


class Hooks:
    """What the graphs source does around a manual capture of graph 0."""

    def __init__(self, recorder: Recorder, frozen: Any):
        self.rec, self.frozen = recorder, frozen

    def begin(self, frame: Any) -> None:
        self.rec.captures[threading.get_ident()] = CaptureState(0, 0, "", GRAPH_CONTEXT, -1)
        self.frozen.capture_began(0, frame)

    def end(self) -> None:
        self.frozen.capture_ended(0)
        self.rec.captures.pop(threading.get_ident(), None)

    def replay(self, count: int, frame: Any) -> None:
        self.rec.replays[0] = count
        self.frozen.sampled(0, count, frame)


def recorded(tmp_path: Path, source: str) -> list[FrozenValue]:
    spool = tmp_path / "run.spool"
    recorder = Recorder(SpoolWriter(str(spool)))
    uninstall = frozen_values.install(recorder)
    assert uninstall is not None and recorder.frozen is not None
    script = tmp_path / "script.py"
    script.write_text(source)
    try:
        runpy.run_path(str(script), {"hooks": Hooks(recorder, recorder.frozen)})
        recorder.frozen.finish(dict(recorder.replays))
    finally:
        uninstall()
        recorder.spool.close()
    return [FrozenValue(*r[1:]) for r in read_records(str(spool)) if r[0] == "frozen"]


def by_use(rows: list[FrozenValue], use: str) -> list[FrozenValue]:
    return [r for r in rows if r.use == use]


def test_eval_after_a_training_capture_is_seen_at_its_call(tmp_path: Path) -> None:
    rows = recorded(tmp_path, SCRIPT)
    [mode] = by_use(rows, USE_MODE)
    assert (mode.name, mode.owner, mode.captured, mode.value, mode.seen, mode.replays) == (
        "model", "Dropout, BatchNorm1d", "train", "eval", SEEN_AT_CALL, 1)
    lines = _stack_lines(tmp_path)
    assert lines[mode.stack] == LINES["model.eval()"]
    assert lines[mode.site] == LINES["y = model(x)"]  # where the capture ran the model


def test_a_python_index_that_picked_a_buffer_and_a_branch_taken(tmp_path: Path) -> None:
    rows = recorded(tmp_path, SCRIPT)
    [index] = by_use(rows, USE_INDEX)
    assert (index.name, index.captured, index.value, index.seen) == (
        "pp.outs[pp.slot]", "0", "1", SEEN_AT_REPLAY)
    [branch] = by_use(rows, USE_BRANCH)
    assert (branch.name, branch.captured, branch.value) == ("pp.calibrate", "False", "True")
    lines = _stack_lines(tmp_path)
    assert lines[index.stack] == LINES["pp.slot ^= 1"]
    assert lines[index.site] == LINES["pp.outs[pp.slot].copy_(y)"]
    assert lines[branch.stack] == LINES["pp.calibrate = True"]
    assert lines[branch.site] == LINES["if pp.calibrate:"]


def test_a_hook_added_and_weights_moved_after_the_capture(tmp_path: Path) -> None:
    rows = recorded(tmp_path, SCRIPT)
    [hooks] = by_use(rows, USE_HOOKS)
    assert (hooks.captured, hooks.value) == ("0 hooks", "1 hook (1 added since the capture)")
    [weights] = by_use(rows, USE_WEIGHTS)
    assert weights.value == "1 of its 7 parameters and buffers in new memory"
    lines = _stack_lines(tmp_path)
    assert lines[hooks.stack] == LINES[
        "handle = model[0].register_forward_hook(lambda m, i, o: None)"]


def test_nothing_is_recorded_where_nothing_changed(tmp_path: Path) -> None:
    quiet = SCRIPT.split("hooks.replay(1")[0] + "hooks.replay(1, sys._getframe())\n" \
        "model.train()\npp.slot = 0\nhooks.replay(2, sys._getframe())\n"
    assert recorded(tmp_path, quiet) == []


def test_an_eval_mode_capture_switched_to_train_is_seen_too(tmp_path: Path) -> None:
    source = SCRIPT.replace("hooks.begin(", "model.eval()\nhooks.begin(").replace(
        "model.eval()\npp.slot", "model.train()\npp.slot")
    [mode] = by_use(recorded(tmp_path, source), USE_MODE)
    assert (mode.captured, mode.value) == ("eval", "train")


def test_what_the_script_read_before_the_capture_is_not_watched(tmp_path: Path) -> None:
    # a test and an index the script ran before the capture began, on values it changes
    source = SCRIPT.replace("hooks.begin(", "if pp.slot == 0:\n    z = pp.outs[pp.slot]\n"
                                            "hooks.begin(")
    rows = recorded(tmp_path, source)
    assert [r.name for r in by_use(rows, USE_BRANCH)] == ["pp.calibrate"]
    assert [r.name for r in by_use(rows, USE_INDEX)] == ["pp.outs[pp.slot]"]
    lines = _stack_lines(tmp_path)
    assert [lines[r.site] for r in by_use(rows, USE_INDEX)] == [
        source.splitlines().index("pp.outs[pp.slot].copy_(y)") + 1]


def test_a_loop_variable_of_the_captured_code_is_not_watched(tmp_path: Path) -> None:
    source = SCRIPT.replace("pp.outs[pp.slot].copy_(y)",
                            "for i in range(2):\n    pp.outs[i].copy_(y)")
    assert not by_use(recorded(tmp_path, source), USE_INDEX)


def test_which_modules_read_their_mode() -> None:
    nn = torch.nn
    assert [reads_training(k) for k in (nn.Linear, nn.Dropout, nn.BatchNorm1d, nn.GELU)] == [
        False, True, True, False]


def test_tests_are_evaluated_without_running_the_scripts_code() -> None:
    values = {("self", "n"): 3, ("self", "mode"): "fast", ("t",): torch.ones(1),
              ("self", "bufs"): [torch.ones(1)], ("self", "table"): {torch.ones(1): 1}}
    evaluate = captured_reads.evaluate

    def of(text: str) -> Any:
        return evaluate(ast.parse(text, mode="eval").body, values.__getitem__)

    assert of("self.n % 2 == 1 and self.mode in ('fast', 'faster')") is True
    assert of("len((1, 2)) + self.n") == 5
    # never a tensor's comparison or truth (a kernel, and a wait for the GPU)
    for unsafe in ("t", "not t", "t > 0", "self.mode.upper()", "self.n / 0",
                   "1 in self.bufs", "self.table[1]"):
        with pytest.raises(captured_reads.Unsafe):
            of(unsafe)
