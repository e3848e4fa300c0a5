"""The eager history keeps the first calls of the user's own functions from the start of
the run, and hands them over as eager calls when something names the function (Python
3.12+, run in a subprocess where this venv's Python is older)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.record.test_calls import _python_with_monitoring

HISTORY = '''
import json, os, sys, tempfile
from graphdoctor.record.eager_history import SAMPLES, EagerHistory
from graphdoctor.record.recorder import Recorder
from graphdoctor.trace.spool import SpoolWriter, read_records

def step(x):
    return x + 1

def later(x):
    return x

def rows(x):
    yield x

path = os.path.join(tempfile.mkdtemp(), "s.spool")
recorder = Recorder(SpoolWriter(path))
history = EagerHistory(recorder)
uninstall = history.install()
for i in range(50):
    step(i)
    json.dumps(i)  # the standard library's code: not kept
list(rows(1))  # a generator: not a plain call
later(1)
history.claim(step.__code__, 7)   # a capture ran step: its calls are function 7's
history.claim(rows.__code__, 8)
step(99)  # after the claim: the eager-call timer's, not the history's
history.claim(step.__code__, 7)
uninstall()
recorder.spool.close()
calls = [r for r in read_records(path) if r[0] == "call"]
print(json.dumps({"samples": SAMPLES, "fns": sorted({r[4] for r in calls}),
                  "modes": sorted({r[5] for r in calls}), "n": len(calls),
                  "durations": all(r[2] > 0 for r in calls),
                  "untimed": all(r[3] == -1 for r in calls)}))
'''


@pytest.mark.skipif(_python_with_monitoring() is None, reason="needs Python 3.12+")
def test_kept_calls_become_the_claimed_functions_eager_calls(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    script = tmp_path / "history.py"
    script.write_text(HISTORY)
    done = subprocess.run([str(_python_with_monitoring()), str(script)], capture_output=True,
                          text=True, cwd=tmp_path, env={"PYTHONPATH": str(root)}, timeout=60)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    # the first SAMPLES calls of step are kept; the cold first one is left out at the claim
    assert seen["n"] == seen["samples"] - 1
    assert seen["fns"] == [7] and seen["modes"] == ["eager"]
    assert seen["durations"] and seen["untimed"]  # no CUDA here: host time only
