"""``graphdoctor run`` records the Python processes the script starts, end to end on the CPU:
a child ``python`` that compiles with a graph break and raises, one that crashes, a child
with a child of its own, a ``multiprocessing`` spawned process, and a child that never
imports torch (not recorded). Each runs as it would without graphdoctor: same output, same
exit codes, its own ``sitecustomize`` and ``PYTHONPATH``; the run leaves no file but its
report. ``--no-children`` records none and leaves the environment alone."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from graphdoctor.launch.children import ENDED_BY_GRAPHDOCTOR
from graphdoctor.report import children, gates
from graphdoctor.report.document import Report
from graphdoctor.report.io import load
from graphdoctor.trace.endings import SIGNALLED
from graphdoctor.trace.names import GRAPH_BREAK

pytestmark = pytest.mark.slow

FAMILY = '''
import json
import multiprocessing as mp
import os
import subprocess
import sys

import torch

BREAKS = """
import torch
def f(x):
    y = x * 2
    print("a graph break")
    return y + 1
torch.compile(f, backend="eager")(torch.ones(3))
raise ValueError("the child fails on purpose")
"""
PARENT = """
import subprocess, sys
code = "import torch; print('grandchild', torch.ones(2).sum().item())"
sys.exit(subprocess.run([sys.executable, "-c", code]).returncode)
"""
CRASH = "import os, signal, torch; os.kill(os.getpid(), signal.SIGSEGV)"
PLAIN = ("import json, os, sys; print(json.dumps(['plain', os.environ.get('THEIR_SITE'), "
         "sys.path, 'torch' in sys.modules]))")


def spawned(queue):
    queue.put(torch.ones(2).sum().item())


if __name__ == "__main__":
    print(json.dumps(["script", os.environ.get("PYTHONPATH")]))
    codes = [subprocess.run([sys.executable, "-c", code]).returncode
             for code in (BREAKS, PARENT, CRASH, PLAIN)]
    context = mp.get_context("spawn")
    queue = context.Queue()
    worker = context.Process(target=spawned, args=(queue,))
    worker.start()
    print("spawned got", queue.get())
    worker.join()
    print(json.dumps(["codes", codes, worker.exitcode]))
    sys.exit(3)
'''


def _run(tmp_path: Path, script: str, *options: str,
         environ: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess[str], Path]:
    (tmp_path / "script.py").write_text(textwrap.dedent(script))
    report = tmp_path / "report.json"
    done = subprocess.run([sys.executable, "-m", "graphdoctor", "run", "-o", str(report),
                           *options, "script.py"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=400, env={**_environment(), **(environ or {})})
    return done, report


def _site_folder_of_the_run(tmp_path: Path, environ: dict[str, str]) -> str:
    """The site folder of the graphdoctor ``_run`` starts: run from ``tmp_path`` it may be the
    installed package, not the checkout this test imported."""
    code = "from graphdoctor.record.processes.follow import SITE_FOLDER; print(SITE_FOLDER)"
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, check=True, env={**_environment(), **environ})
    return done.stdout.strip()


def _environment() -> dict[str, str]:
    """This process's environment without graphdoctor's own variables."""
    return {k: v for k, v in os.environ.items() if not k.startswith("GRAPHDOCTOR_")}


def _said(stdout: str, first: str) -> list[object]:
    return next(json.loads(line) for line in stdout.splitlines()
                if line.startswith(f'["{first}"'))


def _their_site(tmp_path: Path) -> Path:
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "sitecustomize.py").write_text("import os\nos.environ['THEIR_SITE'] = 'ran'\n")
    return theirs


def _by_command(report: Report) -> dict[str, Report]:
    """Each child by a word of its command line."""
    kinds = {"torch.compile": "breaks", "SIGSEGV": "crash", "grandchild": "grandchild",
             "multiprocessing": "spawn"}
    return {kind: child for child in report.children for word, kind in kinds.items()
            if word in " ".join(child.trace.meta.command)}


def test_the_processes_a_script_starts_are_recorded_into_its_report(tmp_path: Path) -> None:
    theirs = _their_site(tmp_path)
    done, path = _run(tmp_path, FAMILY, environ={"PYTHONPATH": str(theirs)})
    assert done.returncode == 3, done.stderr
    script_path = _said(done.stdout, "script")[1]
    site_folder = _site_folder_of_the_run(tmp_path, {"PYTHONPATH": str(theirs)})
    assert script_path == os.pathsep.join([site_folder, str(theirs)]), "one folder more"
    assert _said(done.stdout, "codes")[1:] == [[1, 0, -signal.SIGSEGV, 0], 0]
    plain = _said(done.stdout, "plain")
    assert plain[1] == "ran" and str(theirs) in plain[2] and site_folder not in plain[2]
    assert "a graph break" in done.stdout and "grandchild 2.0" in done.stdout
    assert "spawned got 2.0" in done.stdout
    assert "ValueError: the child fails on purpose" in done.stderr, "the child's own traceback"
    report = load(path)
    assert len(report.children) == 4, [c.trace.meta.command for c in report.children]
    found = _by_command(report)
    breaks, crash, grand, spawn = (found[k] for k in ("breaks", "crash", "grandchild", "spawn"))
    script_pid = report.trace.meta.pid
    assert {c.trace.meta.parent_pid for c in (breaks, crash, spawn)} == {script_pid}
    assert grand.trace.meta.parent_pid not in {script_pid, *(c.trace.meta.pid
                                                            for c in report.children)}
    assert breaks.trace.status.exit_code == 1
    assert [link.message for e in breaks.trace.exceptions for link in e.chain] == \
        ["the child fails on purpose"]
    assert any(e.kind == GRAPH_BREAK for e in breaks.trace.compile_events)
    assert (crash.trace.status.reason, crash.trace.status.signal) == (SIGNALLED, signal.SIGSEGV)
    assert grand.trace.status.complete and spawn.trace.status.complete
    label = children.label(breaks.trace.meta)
    assert f"graphdoctor: {label} exited with code 1" in done.stderr
    assert f"graphdoctor: {children.label(crash.trace.meta)} was killed by SIGSEGV" in done.stderr
    (trip,) = gates.check(report, ["graph-break"])
    assert trip.reason.startswith(f"in {label}: 1 graph break")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json", "script.py", "theirs"]


LEFT_RUNNING = '''
import os, subprocess, sys, time
marker = os.path.abspath("started")
subprocess.Popen([sys.executable, "-c", f"""
import time, torch
open({marker!r}, "w").close()
time.sleep(600)
"""], start_new_session=True)
while not os.path.exists(marker):
    time.sleep(0.1)
'''


def test_a_child_the_script_leaves_running_is_ended_and_says_so(tmp_path: Path) -> None:
    done, path = _run(tmp_path, LEFT_RUNNING)
    assert done.returncode == 0, done.stderr
    assert "graphdoctor: ended 1 process the script left running" in done.stderr
    (child,) = load(path).children
    assert (child.trace.status.reason, child.trace.status.signal) == (SIGNALLED, signal.SIGTERM)
    assert ENDED_BY_GRAPHDOCTOR in {note.why for note in child.trace.meta.not_recorded}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json", "script.py", "started"]


NOT_FOLLOWED = '''
import json, os, subprocess, sys
print(json.dumps(["script", os.environ.get("PYTHONPATH"), os.environ.get("GRAPHDOCTOR_FOLLOW")]))
sys.exit(subprocess.run([sys.executable, "-c", "import torch, sys; sys.exit(5)"]).returncode)
'''


def test_no_children_records_none_and_leaves_the_environment_as_it_was(tmp_path: Path) -> None:
    theirs = _their_site(tmp_path)
    done, path = _run(tmp_path, NOT_FOLLOWED, "--no-children",
                      environ={"PYTHONPATH": str(theirs)})
    assert done.returncode == 5, done.stderr
    assert _said(done.stdout, "script") == ["script", str(theirs), None]
    assert load(path).children == [] and "recorded too" not in done.stderr
