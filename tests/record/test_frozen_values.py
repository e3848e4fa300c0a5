"""The frozen values source on the CPU: what a capture takes by value is bound to the names
the script holds it in, and a later change is recorded with the line that made it. The
capture itself is stood in for (no GPU here): the capture state a real capture sets, and the
calls the graphs source makes at its begin, end and sampled replays. The GPU recordings
under fixtures/ show the same end to end."""

from __future__ import annotations

import runpy
import threading
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from graphdoctor.record.frozen import frozen_values, source_assignments  # noqa: E402
from graphdoctor.record.recorder import CaptureState, Recorder  # noqa: E402
from graphdoctor.trace.event_kinds import FrozenValue  # noqa: E402
from graphdoctor.trace.names import (  # noqa: E402
    GRAPH_CONTEXT,
    HELD_BY_ATTRIBUTE,
    HELD_BY_OPTIMIZER,
    HELD_BY_VARIABLE,
    SEEN_AT_END,
    SEEN_AT_REPLAY,
    SEEN_SCHEDULER,
)
from graphdoctor.trace.spool.file import SpoolWriter, read_records  # noqa: E402

SCALE_SCRIPT = '''
import sys
import torch
x = torch.ones(4)
out = torch.zeros(4)
k_cache = torch.zeros(2, 8)
scale = 2.0
pos = 3
class Head:
    def __init__(self):
        self.temperature = 0.5
head = Head()
hooks.begin(sys._getframe())
out.copy_(x * scale)
k_cache[:, pos] = 1.0
y = x.clamp(min=head.temperature)
z = x * 0.25
hooks.end()
hooks.replay(1, sys._getframe())
scale = 0.5
pos += 1
head.temperature = 0.75
hooks.replay(2, sys._getframe())
'''

OPTIMIZER_SCRIPT = '''
import torch
model = torch.nn.Linear(4, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: 0.0 if step >= 2 else 1.0)
hooks.capturing(True)
model(torch.ones(1, 4)).sum().backward()
opt.step()
hooks.capturing(False)
for step in range(3):
    hooks.replays(step + 1)
    sched.step()
opt.param_groups[0]["momentum"] = 0.5
'''


class Hooks:
    """What the graphs source does around a manual capture of graph 0."""

    def __init__(self, recorder: Recorder, frozen: frozen_values.FrozenValues):
        self.rec, self.frozen = recorder, frozen

    def begin(self, frame: Any) -> None:
        self.frozen.capture_began(0, frame)

    def end(self) -> None:
        self.frozen.capture_ended(0)

    def replay(self, count: int, frame: Any) -> None:
        self.rec.replays[0] = count
        self.frozen.sampled(0, count, frame)

    def replays(self, count: int) -> None:
        self.rec.replays[0] = count

    def capturing(self, on: bool) -> None:
        if on:
            self.rec.captures[threading.get_ident()] = CaptureState(0, 0, "", GRAPH_CONTEXT, -1)
        else:
            self.rec.captures.pop(threading.get_ident(), None)


def _recorded(tmp_path: Path, source: str) -> list[FrozenValue]:
    spool = tmp_path / "run.spool"
    recorder = Recorder(SpoolWriter(str(spool)))
    uninstall = frozen_values.install(recorder)
    assert uninstall is not None and recorder.frozen is not None
    script = tmp_path / "script.py"
    script.write_text(source)
    try:
        runpy.run_path(str(script), {"hooks": Hooks(recorder, recorder.frozen)})  # type:
        # ignore[arg-type]
        recorder.frozen.finish(dict(recorder.replays))
    finally:
        uninstall()
        recorder.spool.close()
    return [FrozenValue(*r[1:]) for r in read_records(str(spool)) if r[0] == "frozen"]


def test_numbers_the_captured_code_passed_are_bound_to_their_names(tmp_path: Path) -> None:
    rows = _recorded(tmp_path, SCALE_SCRIPT)
    changed = {(r.name, r.held_by, r.captured, r.value, r.seen, r.replays) for r in rows}
    assert changed == {
        ("scale", HELD_BY_VARIABLE, "2.0", "0.5", SEEN_AT_REPLAY, 1),
        ("pos", HELD_BY_VARIABLE, "3", "4", SEEN_AT_REPLAY, 1),
        ("head.temperature", HELD_BY_ATTRIBUTE, "0.5", "0.75", SEEN_AT_REPLAY, 1),
    }
    assert {r.owner for r in rows} == {"script.py", "Head"}


def test_a_change_seen_at_a_replay_is_put_on_the_assignment_after_the_capture(
        tmp_path: Path) -> None:
    rows = {r.name: r for r in _recorded(tmp_path, SCALE_SCRIPT)}
    spool_stacks = _stack_lines(tmp_path)
    assert spool_stacks[rows["scale"].stack] == 20  # scale = 0.5, not scale = 2.0 (line 7)
    assert spool_stacks[rows["pos"].stack] == 21  # pos += 1
    assert spool_stacks[rows["scale"].site] == 14  # where the graph took it


def test_a_scheduler_step_that_changes_a_captured_lr_is_recorded_at_its_line(
        tmp_path: Path) -> None:
    rows = _recorded(tmp_path, OPTIMIZER_SCRIPT)
    lr = [r for r in rows if r.name == "param_groups[0]['lr']"]
    assert [(r.captured, r.value, r.seen, r.replays, r.held_by, r.owner) for r in lr] == [
        ("0.1", "0.0", SEEN_SCHEDULER, 2, HELD_BY_OPTIMIZER, "SGD")]
    assert _stack_lines(tmp_path)[lr[0].stack] == 12  # sched.step()
    momentum = [r for r in rows if r.name == "param_groups[0]['momentum']"]
    assert [(r.value, r.seen, r.replays) for r in momentum] == [("0.5", SEEN_AT_END, 3)]
    assert _stack_lines(tmp_path)[momentum[0].stack] == 13  # the assignment


def test_nothing_is_recorded_where_nothing_changed(tmp_path: Path) -> None:
    constant = OPTIMIZER_SCRIPT.replace("0.0 if step >= 2 else 1.0", "1.0").replace(
        'opt.param_groups[0]["momentum"] = 0.5', "")
    assert _recorded(tmp_path, constant) == []


def test_a_tensor_lr_is_left_alone(tmp_path: Path) -> None:
    tensor_lr = OPTIMIZER_SCRIPT.replace("lr=0.1", "lr=torch.tensor(0.1)").replace(
        'opt.param_groups[0]["momentum"] = 0.5', "")
    assert _recorded(tmp_path, tensor_lr) == []


def test_assignments_are_found_by_name_attribute_and_key(tmp_path: Path) -> None:
    source = tmp_path / "loop.py"
    source.write_text("def f(g, m):\n    g['lr'] = 0\n    m.scale *= 2\n"
                      "    for pos in range(3):\n        x[pos] = 1\n")
    found = source_assignments.assignments
    assert found(str(source), "key", "lr") == ((2, "f"),)
    assert found(str(source), "attribute", "scale") == ((3, "f"),)
    assert found(str(source), "name", "pos") == ((4, "f"),)  # not x[pos] = 1, which reads it


def _stack_lines(tmp_path: Path) -> dict[int, int]:
    """Each stack id of the spool to the line of its innermost frame in script.py."""
    lines: dict[int, int] = {}
    frames: dict[int, tuple[str, int]] = {}
    for record in read_records(str(tmp_path / "run.spool")):
        if record[0] == "frame":
            frames[record[1]] = (record[2], record[3])
        elif record[0] == "stack":
            in_script = [frames[f] for f in record[2] if frames[f][0].endswith("script.py")]
            if in_script:
                lines[record[1]] = in_script[-1][1]
    return lines
