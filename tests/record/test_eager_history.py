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
from graphdoctor.record.eager.eager_history import EagerHistory
from graphdoctor.record.eager.kept_calls import KEPT, TIMED_CALLS
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
from graphdoctor.record.eager.eager_history import EagerHistory
from graphdoctor.record.eager.kept_calls import TIMED_CALLS
from graphdoctor.record.eager.part_sites import STALE_AFTER
from graphdoctor.record.recorder import Recorder
from graphdoctor.trace.spool.file import SpoolWriter

class Counted(dict):
    """The history's functions, counting its callbacks' lookups of each code."""
    looked = {}
    def get(self, code, default=None):
        self.looked[code] = self.looked.get(code, 0) + 1
        return super().get(code, default)

class Block(torch.Module):  # the user's own module, calling torch's inside its forward
    def __init__(self):
        self.inner = torch.Leaf()
    def forward(self, x):
        return self.inner(x) * 2

def steps(n, model, failing, nested):
    for i in range(n):
        model(i)  # the user's own call; the four inside it are torch's
        if i == 10:
            try:
                failing(i)  # the user's own call, which raises: never returns
            except ValueError:
                pass
        nested(i)  # torch's, then the user's Block, then its own call of torch's Leaf

recorder = Recorder(SpoolWriter(os.path.join(tempfile.mkdtemp(), "s.spool")))
history = EagerHistory(recorder)
history._functions = Counted()
inner = lambda: torch.Sequential(torch.Leaf(), torch.Leaf())
model = torch.Sequential(inner(), inner(), inner(), inner())
failing = torch.Sequential(torch.Fails())
nested = torch.Sequential(Block())

raises = torch.Fails()  # a part of its own, not yet past its window as Sequential is

def fails_out(i):
    raises(i)  # raises out of this frame: the call open here is left behind

def recorded():  # a recording begun inside a function already running
    uninstall = history.install()
    steps(40, model, failing, nested)
    steps(TIMED_CALLS, model, failing, nested)  # past the window: switched off
    opened = sum(map(len, history._sites._open.values()))
    for i in range(20):
        try:
            fails_out(i)
        except ValueError:
            pass
    uninstall()
    return opened, sum(map(len, history._sites._open.values()))

opened, left_behind = recorded()
sequential = history._functions[torch.Sequential.forward.__code__]
leaf = history._functions[torch.Leaf.forward.__code__]
print(json.dumps({
    "sequential": sequential.timed, "leaf": leaf.timed, "users_own": sequential.users_own,
    "open": opened, "left_behind": left_behind, "stale_after": STALE_AFTER,
    "looked": Counted.looked.get(torch.Sequential.forward.__code__, 0),
    "window": TIMED_CALLS}))
'''


@pytest.mark.skipif(_python_with_monitoring() is None, reason="needs Python 3.12+")
def test_torch_s_step_parts_are_timed_at_the_user_s_own_call_sites(tmp_path: Path) -> None:
    """Inside the user's ``model(x)``, torch calls the same ``Sequential.forward`` for each
    inner Sequential: the user's calls are timed where the user's code makes them, and
    torch's own calls cost no callback (the part's own start and return are switched off
    the first time they fire). A call that raised leaves nothing open; a torch call made by
    the user's own module inside torch's is the user's; a part is timed for its first
    ``TIMED_CALLS`` calls, then its sites are switched off; calls that raised out of their
    frames are not held for ever."""
    done = run_with_monitoring(tmp_path, NESTED)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    # model(i) and nested(i) are the user's own Sequential calls: two a step
    assert seen["sequential"] == seen["window"]
    assert seen["leaf"] == seen["window"]  # Block's own call of Leaf, not the model's
    assert seen["users_own"] and seen["open"] == 0
    # twenty calls that raised out of their frames: those frames, gone, are let go of (and
    # with them their locals) once STALE_AFTER calls are open on the thread
    assert 0 < seen["left_behind"] <= seen["stale_after"] < 20
    # looked up where each of its three sites was learnt, and at its first start and its
    # return's first firing, both switched off then: not at each of its 1,500 calls
    assert seen["looked"] <= 5


LOOPS_WRITTEN_OTHERWISE = NESTED[:NESTED.index("class Counted")] + \
    '''recorder = Recorder(SpoolWriter(os.path.join(tempfile.mkdtemp(), "s.spool")))
history = EagerHistory(recorder)
model = torch.Sequential(torch.Leaf())

def losses(n):  # a training loop written as a generator: a step's loss at each yield
    for i in range(n):
        yield model(i)

async def step(i):  # and as a coroutine
    return model(i)

uninstall = history.install()
for _ in losses(10):
    pass
import asyncio
for i in range(5):
    asyncio.run(step(i))
uninstall()
print(json.dumps({"timed": history._functions[torch.Sequential.forward.__code__].timed,
                  "open": sum(map(len, history._sites._open.values()))}))
'''


@pytest.mark.skipif(_python_with_monitoring() is None, reason="needs Python 3.12+")
def test_step_parts_called_from_a_generator_or_a_coroutine_are_the_user_s(
        tmp_path: Path) -> None:
    """A generator or coroutine of the user's is no call to time itself, but its calls of
    torch's step parts are the user's own: ten from the generator, five from the coroutine."""
    done = run_with_monitoring(tmp_path, LOOPS_WRITTEN_OTHERWISE)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"timed": 15, "open": 0}
