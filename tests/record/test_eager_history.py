"""The eager history keeps the first calls of the user's own functions from the start of
the run, and hands them over as eager calls when something names the function (Python
3.12+, run in a subprocess where this venv's Python is older)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.record.test_calls import _python_with_monitoring, run_with_monitoring

HISTORY = '''
import json, os, sys, tempfile, types
from graphdoctor.record.eager_history import KEPT, TIMED_CALLS, EagerHistory
from graphdoctor.record.recorder import Recorder
from graphdoctor.trace.spool.file import SpoolWriter, read_records

def step(x):
    return x + 1

def later(x):
    return x

def rows(x):
    yield x

def short(x):
    return x

path = os.path.join(tempfile.mkdtemp(), "s.spool")
recorder = Recorder(SpoolWriter(path))
history = EagerHistory(recorder)
uninstall = history.install()
for i in range(TIMED_CALLS + 50):
    step(i)
    json.dumps(i)  # the standard library's code: not kept
list(rows(1))  # a generator: not a plain call
later(1)
for i in range(5):
    short(i)
# as torch.compile does: a new code object made from the function's, not equal to it
rebuilt = short.__code__.replace(co_consts=short.__code__.co_consts + ("rebuilt",))
assert rebuilt != short.__code__
types.FunctionType(rebuilt, globals())(1)  # run once, as torch.compile runs it: not kept
history.claim(rebuilt, 9)  # five calls: the first is left out as cold
history.claim(step.__code__, 7)   # a capture ran step: its calls are function 7's
history.claim(rows.__code__, 8)
step(99)  # after the claim: the eager-call timer's, not the history's
history.claim(step.__code__, 7)
uninstall()
recorder.spool.close()
calls = [r for r in read_records(path) if r[0] == "call"]
print(json.dumps({"samples": KEPT, "fns": sorted({r[4] for r in calls}),
                  "short": sum(r[4] == 9 for r in calls),
                  "modes": sorted({r[5] for r in calls}), "n": len(calls),
                  "durations": all(r[2] > 0 for r in calls),
                  "untimed": all(r[3] == -1 for r in calls)}))
'''


@pytest.mark.skipif(_python_with_monitoring() is None, reason="needs Python 3.12+")
def test_kept_calls_become_the_claimed_functions_eager_calls(tmp_path: Path) -> None:
    done = run_with_monitoring(tmp_path, HISTORY)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    # the latest KEPT of its first TIMED_CALLS calls are kept, none of them the cold first
    assert seen["n"] - seen["short"] == seen["samples"]
    assert seen["short"] == 4  # a function called five times: its cold first call left out
    assert seen["fns"] == [7, 9] and seen["modes"] == ["eager"]
    assert seen["durations"] and seen["untimed"]  # no CUDA here: host time only


NESTED = '''
import json, os, sys, tempfile
# a stand-in for torch's nn.Module, where graphdoctor tells torch's code by its path
site = os.path.join(tempfile.mkdtemp(), "site-packages")
os.makedirs(os.path.join(site, "torch"))
open(os.path.join(site, "torch", "__init__.py"), "w").write("""
class Module:
    def _wrapped_call_impl(self, *args):
        return self._call_impl(*args)
    def _call_impl(self, *args):
        return self.forward(*args)
    __call__ = _wrapped_call_impl
class Sequential(Module):
    def __init__(self, *modules):
        self.modules = modules
    def forward(self, x):
        for module in self.modules:
            x = module(x)
        return x
class Leaf(Module):
    def forward(self, x):
        return x + 1
class Fails(Module):
    def forward(self, x):
        raise ValueError(x)
""")
sys.path.insert(0, site)
import torch
from graphdoctor.record.eager_history import EagerHistory
from graphdoctor.record.recorder import Recorder
from graphdoctor.trace.spool.file import SpoolWriter

recorder = Recorder(SpoolWriter(os.path.join(tempfile.mkdtemp(), "s.spool")))
history = EagerHistory(recorder)
uninstall = history.install()
model = torch.Sequential(torch.Sequential(torch.Leaf()), torch.Sequential(torch.Leaf()))
failing = torch.Sequential(torch.Fails())
for i in range(40):
    model(i)  # the user's own call; the two inside it are torch's
    if i == 10:
        try:
            failing(i)  # the user's own call, which raises: no return fires for it
        except ValueError:
            pass
kept = history._functions[torch.Sequential.forward.__code__]
print(json.dumps({"timed": kept.timed, "open": sum(map(len, kept.open.values())),
                  "users_own": kept.users_own}))
uninstall()
'''


@pytest.mark.skipif(_python_with_monitoring() is None, reason="needs Python 3.12+")
def test_torch_s_own_calls_and_a_call_that_raised_leave_the_user_s_calls_paired(
        tmp_path: Path) -> None:
    """Inside the user's ``model(x)``, torch calls the same ``Sequential.forward`` for
    each inner Sequential: those returns are told apart (by frame) and not counted. A
    call that raised leaves its start open, which the next return of that code drops."""
    done = run_with_monitoring(tmp_path, NESTED)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"timed": 40, "open": 0, "users_own": True}
