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
