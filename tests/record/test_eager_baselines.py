"""Where the eager history finds a graph's eager baseline besides the functions a capture
called: the user function that made every call of an inline captured block (covering), and
the user function a graph replays inside that also ran without it (its step). And what it
keeps: a library's function only where the user's code calls it, and no more CUDA event
pairs than the calls it keeps (Python 3.12+, run in a subprocess where this venv's Python is
older; no CUDA: a stand-in timer counts the pairs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphdoctor.record.device.gpu_sample import TIMED_FIRST
from graphdoctor.record.eager.kept_calls import GPU_EVERY, KEPT, TIMED_CALLS
from tests.record.test_calls import _python_with_monitoring, run_with_monitoring

needs_monitoring = pytest.mark.skipif(_python_with_monitoring() is None,
                                      reason="needs Python 3.12+")

SETUP = '''
import json, os, sys, tempfile, threading
from graphdoctor.record.eager.calls import call_key
from graphdoctor.record.eager.eager_history import EagerHistory
from graphdoctor.record.eager.kept_calls import KEPT, TIMED_CALLS
from graphdoctor.record.recorder import Recorder
from graphdoctor.trace.spool.file import SpoolWriter, read_records

exec(compile("""
class Timer:
    # Stands in for CUDA events: counts pairs started, reused and settled. Compiled from a
    # string so that the history does not keep its own calls as the user's.
    def __init__(self):
        self.started = self.released = self.settled = 0
    def start(self):
        self.started += 1
        return (self.started, 0, 0, 0)
    def end(self, token):
        pass
    def settle(self, token, row):
        self.settled += 1
        recorder.emit(row._replace(gpu=7))
    def release(self, token):
        self.released += 1
""", "<timer>", "exec"))

path = os.path.join(tempfile.mkdtemp(), "s.spool")
recorder = Recorder(SpoolWriter(path))
recorder.timer = Timer()
history = EagerHistory(recorder)
uninstall = history.install()

def records(tag):
    uninstall()
    recorder.spool.close()
    return [r[1:] for r in read_records(path) if r[0] == tag]
'''

COVERING = SETUP + '''
class Model:
    def forward(self, x):
        return x
    def __call__(self, x):
        return self.forward(x)

class Opt:
    def step(self):
        pass
    def zero_grad(self):
        pass

model, other, opt = Model(), Model(), Opt()

def forward_loss(x):
    return model(x)

def train_step(x):  # makes the block's calls, model(x) through forward_loss
    opt.zero_grad()
    forward_loss(x)
    opt.step()

def eval_step(x):  # the same model, no optimizer step: does not cover the block
    return model(x)

def epoch(x):  # covers it too, but makes more calls besides
    train_step(x)
    other(x)

def never_returns_first(x):  # running when asked: no call of it has ended
    found = history.covering([call_key(recorder, model), call_key(recorder, opt.step)])
    return found.co_name if found else None

for i in range(5):
    epoch(i)
    eval_step(i)
block = [call_key(recorder, model), call_key(recorder, opt.step)]
found = history.covering(block)
print(json.dumps({
    "block": found.co_name if found else None,
    "other": history.covering([call_key(recorder, other)]).co_name,
    "nobody": history.covering([call_key(recorder, Model())]),
    "running": never_returns_first(0),
    "keys": block,
}))
'''


@needs_monitoring
def test_an_inline_block_is_covered_by_the_smallest_function_making_all_its_calls(
        tmp_path: Path) -> None:
    done = run_with_monitoring(tmp_path, COVERING)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["block"] == "train_step"  # not eval_step (no opt.step), not epoch (larger)
    assert seen["other"] == "epoch"
    assert seen["nobody"] is None  # a model no eager code called
    assert seen["running"] == "train_step"  # a function still running is no baseline
    model_key, step_key = seen["keys"]
    assert ":forward@" in model_key and ":step@" in step_key  # each with its object


STEP = SETUP + '''
def train_step(replays):
    if replays:
        history.replaying(5)  # what the replay hook calls: graph 5 replays in here
        backward = threading.Thread(target=history.replaying, args=(6,))
        backward.start()  # graph 6 replays on a thread of torch's, as autograd's does
        backward.join()

def rare(replays):  # two calls without the graph: too few to be its step
    if replays:
        history.replaying(7)

for i in range(10):
    train_step(False)
for i in range(6):
    train_step(True)
rare(False), rare(False), rare(True)
steps = records("graph_step")
print(json.dumps({"steps": steps, "calls": [r[4:6] for r in read_records(path)
                                            if r[0] == "call"],
                  "fns": [r[1:4] for r in read_records(path) if r[0] == "fn"]}))
'''


@needs_monitoring
def test_a_graph_replaying_inside_a_function_that_ran_without_it_makes_that_its_step(
        tmp_path: Path) -> None:
    done = run_with_monitoring(tmp_path, STEP)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    [[fn, name, kind]] = seen["fns"]
    assert (name, kind) == ("train_step", "step")
    assert seen["steps"] == [[5, fn], [6, fn]]  # each graph once; none for graph 7
    modes = [mode for call_fn, mode in seen["calls"] if call_fn == fn]
    # ten calls without the graph, the cold first left out; then six with it
    assert modes == ["eager"] * 9 + ["replay"] * 6


LIBRARY = SETUP + '''
package = os.path.join(tempfile.mkdtemp(), "site-packages", "fakelib")
os.makedirs(package)
with open(os.path.join(package, "__init__.py"), "w") as f:
    f.write("def entry(x):\\n    return inner(x)\\n\\ndef inner(x):\\n    return x\\n")
sys.path.insert(0, os.path.dirname(package))
import fakelib

def step(x):
    return x

before = recorder.timer.started
for i in range(TIMED_CALLS + 50):
    step(i)
for i in range(5):
    fakelib.entry(i)
started = recorder.timer.started - before  # by step's and entry's calls
history.claim(fakelib.entry.__code__, 1)
history.claim(fakelib.inner.__code__, 2)
history.claim(step.__code__, 3)
timer = recorder.timer
held = timer.started - timer.released - timer.settled
still_kept = sum(len(f.calls) for f in history._functions.values())  # the module's, say
calls = records("call")
print(json.dumps({"fns": [r[3] for r in calls], "gpu": [r[2] for r in calls],
                  "held": held - still_kept, "started": started,
                  "reused": timer.released, "kept": KEPT, "timed": TIMED_CALLS}))
'''


@needs_monitoring
def test_a_library_is_kept_where_the_user_calls_it_and_event_pairs_are_reused(
        tmp_path: Path) -> None:
    done = run_with_monitoring(tmp_path, LIBRARY)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    # entry's five calls (the cold first left out); inner, called by the library only, none
    assert seen["fns"].count(1) == 4 and 2 not in seen["fns"]
    assert seen["fns"].count(3) == seen["kept"]
    gpu = {fn: [g for f, g in zip(seen["fns"], seen["gpu"]) if f == fn] for fn in (1, 3)}
    assert gpu[1] == [7] * 4  # among a function's first TIMED_FIRST: each timed on the GPU
    # after those, one in GPU_EVERY: of step's latest KEPT, every fourth has its GPU time
    assert sorted(gpu[3]) == [-1] * (KEPT - KEPT // GPU_EVERY) + [7] * (KEPT // GPU_EVERY)
    assert seen["kept"] == KEPT and seen["timed"] == TIMED_CALLS
    assert seen["started"] == 5 + TIMED_FIRST + (TIMED_CALLS - TIMED_FIRST) // GPU_EVERY
    # step's timed calls past the latest KEPT gave their pairs back; only kept ones hold any
    assert seen["reused"] >= seen["started"] - 4 - KEPT // GPU_EVERY  # entry's cold first too
    assert seen["held"] == 0
