"""Which functions a capture ran: the code a call reaches, and the capturing frame's calls
seen through sys.monitoring (Python 3.12+)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from graphdoctor.record.eager.calls import callee_code


def step(x: int) -> int:
    return x


class Model:
    def forward(self, x: int) -> int:
        return x

    def __call__(self, x: int) -> int:
        return self.forward(x)


def test_a_call_reaches_a_functions_own_code() -> None:
    assert callee_code(step) is step.__code__


def test_a_bound_method_reaches_its_functions_code() -> None:
    assert callee_code(Model().forward) is Model.forward.__code__


def test_calling_a_module_reaches_its_forward() -> None:
    torch = pytest.importorskip("torch")
    linear = torch.nn.Linear(2, 2)
    assert callee_code(linear) is torch.nn.Linear.forward.__code__
    assert callee_code(Model()) is Model.forward.__code__


def test_torchs_mode_decorators_reach_the_users_function() -> None:
    """A step under ``@torch.no_grad()`` (as real inference steps are written) was never the
    capture's callee: the call reached torch's wrapper. Other wrappers stay as they are."""
    torch = pytest.importorskip("torch")
    assert callee_code(torch.no_grad()(step)) is step.__code__
    assert callee_code(torch.inference_mode()(torch.autocast("cpu")(step))) is step.__code__

    def wrapper(x: int) -> int:
        return step(x)

    wrapper.__wrapped__ = step  # type: ignore[attr-defined]  # functools.wraps, the user's own
    assert callee_code(wrapper) is wrapper.__code__


def test_a_builtin_or_a_plain_value_reaches_no_python_code() -> None:
    assert callee_code(len) is None and callee_code(3) is None


class CompiledFunction:
    """As a Cython function is (CuPy's ``Stream.end_capture``): callable, with a code object
    of its file and name, that never runs as Python."""

    __code__ = step.__code__

    def __call__(self) -> None:
        pass


def test_compiled_code_is_no_callee_however_it_looks() -> None:
    assert callee_code(CompiledFunction()) is None


WATCH = '''
import sys, threading, tempfile, os
from graphdoctor.record.eager.calls import CallSiteWatcher, Monitor
from graphdoctor.record.recorder import CaptureState, Recorder
from graphdoctor.trace.spool.file import SpoolWriter

def step(x):
    return x

class Model:
    def forward(self, x):
        return x
    def __call__(self, x):
        return self.forward(x)

def capture(recorder, watcher, model):
    state = CaptureState(0, 0, "", "CUDAGraph", -1)
    recorder.captures[threading.get_ident()] = state
    code = watcher.start(sys._getframe())
    step(1)
    model(2)
    len([1])
    step(3)
    watcher.stop(code)
    recorder.captures.clear()
    step(4)  # after the capture: not a callee of anything
    return [c.co_name for c in state.callees]

recorder = Recorder(SpoolWriter(os.path.join(tempfile.mkdtemp(), "s.spool")))
monitor = Monitor()
print(capture(recorder, CallSiteWatcher(recorder, monitor), Model()))
monitor.release()
'''

PYTHON_312 = Path("/root/.pyenv/versions/3.12.1/bin/python")


def _python_with_monitoring() -> str | None:
    if sys.version_info >= (3, 12):
        return sys.executable
    return str(PYTHON_312) if PYTHON_312.exists() else None


def run_with_monitoring(tmp_path: Path, source: str) -> subprocess.CompletedProcess[str]:
    """Run ``source`` as a script under a Python that has sys.monitoring, with this checkout
    importable."""
    root = Path(__file__).resolve().parents[2]
    script = tmp_path / "script.py"
    script.write_text(source)
    return subprocess.run([str(_python_with_monitoring()), str(script)], capture_output=True,
                          text=True, cwd=tmp_path, env={"PYTHONPATH": str(root)}, timeout=60)


@pytest.mark.skipif(_python_with_monitoring() is None, reason="needs Python 3.12+")
def test_the_capturing_frames_own_calls_are_its_callees(tmp_path: Path) -> None:
    done = run_with_monitoring(tmp_path, WATCH)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['step', 'forward']"


def test_torch_work_names_what_an_eager_step_of_the_callees_leaves_out() -> None:
    torch = pytest.importorskip("torch")
    from graphdoctor.record.eager.calls import torch_work

    x = torch.ones(2, requires_grad=True)
    model = torch.nn.Linear(2, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    assert torch_work(x.sum().backward) == "Tensor.backward"
    assert torch_work(torch.nn.CrossEntropyLoss()) == "CrossEntropyLoss"
    assert torch_work(opt.step) == "SGD.step"
    assert torch_work(torch.matmul) == "matmul"
    # neither the user's code, Python's, nor the stream and graph machinery of torch.cuda
    assert [torch_work(t) for t in (step, len, torch.cuda.current_stream,
                                    torch.cuda.CUDAGraph)] == ["", "", "", ""]


SAMPLED = '''
import json, os, tempfile
from graphdoctor.record.device import gpu_sample
from graphdoctor.record.eager.calls import EagerCallTimer, Monitor
from graphdoctor.record.recorder import Recorder
from graphdoctor.trace.spool.file import SpoolWriter, read_records

gpu_sample.TIMED_GAP_NS = 10**15  # no call comes late enough to be timed again

class Timer:  # stands in for the CUDA event timer
    untimed = 0
    def __init__(self, recorder):
        self.recorder, self.started = recorder, 0
    def start(self):
        self.started += 1
        return ("token",)
    def stop(self, token, row):
        self.recorder.emit(row._replace(gpu=5000))

def step(x):
    return x + 1

path = os.path.join(tempfile.mkdtemp(), "s.spool")
recorder = Recorder(SpoolWriter(path))
timer, monitor = Timer(recorder), Monitor()
eager = EagerCallTimer(recorder, monitor, timer=lambda: timer)
assert eager.watch(step.__code__, 3, 0)
for i in range(200):
    step(i)
eager.close()
monitor.release()
recorder.spool.close()
records = list(read_records(path))
calls = [r for r in records if r[0] == "call"]
print(json.dumps({"started": timer.started, "n": len(calls),
                  "timed": sum(r[3] >= 0 for r in calls),
                  "notes": [r[1] for r in records if r[0] == "note"]}))
'''


@pytest.mark.skipif(_python_with_monitoring() is None, reason="needs Python 3.12+")
def test_every_eager_call_is_kept_and_a_sample_timed_on_the_gpu(tmp_path: Path) -> None:
    from graphdoctor.record.device.gpu_sample import TIMED_FIRST

    done = run_with_monitoring(tmp_path, SAMPLED)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["n"] == 200 and seen["started"] == seen["timed"] == TIMED_FIRST
    assert seen["notes"] == ["eager call GPU times"]


def test_torchs_step_parts_are_forwards_backward_and_an_optimizers_step() -> None:
    import torch

    from graphdoctor.record.eager.step_parts import torch_step_part

    param = torch.nn.Parameter(torch.zeros(2))
    optimizer = torch.optim.SGD([param], lr=0.1)
    assert torch_step_part(torch.nn.Sequential.forward.__code__)
    assert torch_step_part(torch.Tensor.backward.__code__)
    assert torch_step_part(type(optimizer).step.__code__)  # torch's profiling wrapper
    assert not torch_step_part(torch.nn.functional.dropout.__code__)


def test_a_ranks_collectives_are_step_parts_and_its_other_calls_are_not() -> None:
    """A rank's inline warm-up (``y = x * 2; dist.all_reduce(y)`` before capturing the same
    lines) is its eager step: each collective is a part, through torch's logging wrapper
    as under it; asking for the rank is not."""
    import torch.distributed as dist

    from graphdoctor.record.eager.step_parts import torch_step_part

    for collective in (dist.all_reduce, dist.all_gather_into_tensor, dist.send, dist.broadcast,
                       *(getattr(dist, n) for n in ("all_gather_single",) if hasattr(dist, n))):
        assert torch_step_part(collective.__code__), collective
        inner = collective
        while hasattr(inner, "__wrapped__"):  # torch's logging wrapper, a deprecation's
            inner = inner.__wrapped__
        assert torch_step_part(inner.__code__), inner
    assert not torch_step_part(dist.get_rank.__code__)
    assert not torch_step_part(dist.get_world_size.__code__)


class _Stacks:
    def kind(self, filename: str) -> str:
        return "user" if filename == __file__ else "torch"


class _Recorder:
    stacks = _Stacks()


def test_a_call_through_module_call_frames_is_the_users_own() -> None:
    import sys

    from graphdoctor.record.eager.step_parts import called_by_user_itself

    def forward() -> bool:
        return called_by_user_itself(_Recorder(), sys._getframe())  # type: ignore[arg-type]

    def _call_impl() -> bool:  # named as nn.Module.__call__'s frames are
        return forward()

    assert _call_impl()  # through the module-call frame, into this test: the user's
    # the same call made by torch's own code (a frame of another file) is not
    library: dict[str, object] = {"inner": _call_impl}
    exec(compile("def library_call():\n    return inner()\n", "torch/nn/container.py",
                 "exec"), library)
    assert not library["library_call"]()  # type: ignore[operator]
