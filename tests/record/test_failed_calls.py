"""The inputs of a compiled call that failed inside torch, written on the CPU: the compiled
function's frame (run below a stand-in for dynamo's, a file under site-packages/torch/_dynamo)
gives its tensor arguments, the script's line above it the call's place; and GD112 over a
small trace built inline names the call, the CPU tensor and the report to write."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from graphdoctor.diagnose.rules import (  # noqa: E402
    gd108_exception_in_capture,
    gd111_capture_failed,
    gd112_torch_internal_error,
)
from graphdoctor.diagnose.view import TraceView  # noqa: E402
from graphdoctor.record.compile import failed_calls  # noqa: E402
from graphdoctor.record.frozen import captured_names  # noqa: E402
from graphdoctor.record.recorder import CompiledCall, Recorder  # noqa: E402
from graphdoctor.trace.event_kinds import CallInput, ErrorLink, ExceptionRecord  # noqa: E402
from graphdoctor.trace.model import Frame, Function, Graph, Trace  # noqa: E402
from graphdoctor.trace.spool.file import SpoolWriter, read_records  # noqa: E402
from tests.record.test_frozen_values import _stack_lines  # noqa: E402

DYNAMO = "def run(fn, *args):\n    return fn(*args)\n"
SCRIPT = '''
import sys
import torch
import eval_frame
table = torch.randn(8, 4)
def pick(table, index, same):
    hooks.failed(sys._getframe(0), [table, index])
out = eval_frame.run(pick, table, torch.tensor(3), table)
'''


def _frame_var(frame: Any, name: str) -> Any:
    try:
        return frame.f_locals[name]
    except KeyError:
        raise NameError(name) from None


class Hooks:
    def __init__(self, recorder: Recorder):
        self.rec = recorder

    def failed(self, frame: Any, inputs: list[Any]) -> None:
        failed_calls.failed(self.rec, CompiledCall(3, "0/0"), inputs, frame)


def test_the_arguments_of_the_failed_call_and_its_line(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    dynamo = tmp_path / "site-packages" / "torch" / "_dynamo"
    dynamo.mkdir(parents=True)
    (dynamo / "eval_frame.py").write_text(DYNAMO)
    monkeypatch.syspath_prepend(str(dynamo))
    if captured_names.FRAME_VAR is None:  # before 3.12: read the frame's locals instead
        monkeypatch.setattr(failed_calls, "FRAME_VAR", _frame_var)
    spool = tmp_path / "run.spool"
    recorder = Recorder(SpoolWriter(str(spool)))
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    runpy.run_path(str(script), {"hooks": Hooks(recorder)})
    recorder.spool.close()
    rows = [CallInput(*r[1:]) for r in read_records(str(spool)) if r[0] == "callin"]
    assert [(r.fn, r.position, r.name, r.device, r.dtype, r.shape, r.alias) for r in rows] == [
        (3, 0, "table", "cpu", "float32", "8x4", -1),
        (3, 1, "index", "cpu", "int64", "scalar", -1),
        (3, 2, "same", "cpu", "float32", "8x4", 0)]  # on table's memory
    assert _stack_lines(tmp_path)[rows[0].stack] == 8  # the call, not pick's own lines


def test_a_failure_outside_the_scripts_frames_writes_nothing_wrong() -> None:
    recorder = Recorder(SpoolWriter("/dev/null"))
    failed_calls.failed(recorder, CompiledCall(0, ""), object(), sys._getframe(0))


POOL = ("These storage data ptrs are not allocated in pool (0, 1) but should be: {1234}. "
        "This could be a bug in inductor aliasing tracking or in a custom op's meta "
        "function. Please file an issue.")


def bug_trace(inputs: list[CallInput]) -> Trace:
    trace = Trace()
    trace.frames = [Frame("/u/pick.py", 12, "<module>"), Frame("/u/pick.py", 5, "pick")]
    trace.stacks = [(0,), (0, 1)]
    trace.functions = [Function(0, "pick", "compiled function", "/u/pick.py", 4)]
    trace.exceptions = [ExceptionRecord(0, 9_000, "uncaught", chain=(
        ErrorLink("RuntimeError", POOL, stack=1),))]
    for row in inputs:
        trace.tables["call_inputs"].append(row)
    return trace


def test_gd112_names_the_call_the_cpu_tensor_and_the_report() -> None:
    rows = [CallInput(8_000, 0, 0, "table", "cuda:0", "float32", "1024x64", -1, 0),
            CallInput(8_000, 0, 2, "position", "cpu", "int64", "scalar", -1, 0)]
    trace = bug_trace(rows)
    trace.meta = type(trace.meta)(torch="2.11.0+cu130")
    [finding] = gd112_torch_internal_error.check(TraceView(trace))
    assert (finding.id, finding.name, finding.category) == ("GD112", "torch-internal-error",
                                                           "failed")
    assert finding.title == ("torch failed its own check calling pick() at pick.py:12, set off "
                             "by a CPU tensor among its inputs (position (cpu, int64, "
                             "scalar)): a bug in torch")
    assert finding.location is not None and finding.location.line == 12  # not pick's line 5
    assert "https://github.com/pytorch/pytorch/issues" in finding.fix
    assert "torch 2.11.0+cu130" in finding.fix and "position.cuda()" in finding.fix
    assert finding.measurements["inputs"][1]["device"] == "cpu"


def test_gd112_without_inputs_and_the_failed_capture_rules_leave_it_alone() -> None:
    trace = bug_trace([])
    trace.exceptions = [ExceptionRecord(0, 9_000, "capture_end", 0, chain=(
        ErrorLink("RuntimeError", POOL, stack=1),))]
    trace.graphs = [Graph(0, "torch.compile", "failed", 100, 9_000, stack=0, error=0)]
    [finding] = gd112_torch_internal_error.check(TraceView(trace))
    assert finding.location is not None and finding.location.line == 5
    assert "without CUDA graphs" in finding.fix
    assert list(gd111_capture_failed.check(TraceView(trace))) == []
    assert list(gd108_exception_in_capture.check(TraceView(trace))) == []
    # the same error without torch's request for a report: the script's own, GD108
    trace.exceptions = [ExceptionRecord(0, 9_000, "capture_end", 0, chain=(
        ErrorLink("RuntimeError", "index out of range", stack=1),))]
    assert [f.id for f in gd108_exception_in_capture.check(TraceView(trace))] == ["GD108"]
