"""Ctrl-C once the script has ended, while graphdoctor builds the report: the first is
answered and the report is still written; a second stops it, says where the raw recording
is kept, and exits 130, never with a traceback or click's ``Aborted!``.

The script writes a few hundred thousand records through the running recorder, so that the
report takes seconds to build: time for the test to press Ctrl-C while it is being built.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from graphdoctor.report.io import load
from tests.record.processes import HAS_PROC, state, wait_for, with_default_signals

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not HAS_PROC, reason="reads process states from /proc")]

BIG_RECORDING = """
import os, sys, time
import torch  # recording starts with it
from graphdoctor.record.session import running
from graphdoctor.trace.event_kinds import Call

recorder, t = running(), time.perf_counter_ns()
for start in range(0, 300_000, 10_000):
    recorder.spool.write_many([Call(t + i, 10, 5, 1, "eager", -1)
                               for i in range(start, start + 10_000)])
print(os.getpid(), flush=True)
{ending}
"""
STOPS_ON_CTRL_C = """
try:
    time.sleep(600)
except KeyboardInterrupt:
    sys.exit(130)  # as Python's own KeyboardInterrupt ends, less its traceback
"""
ANSWER = "graphdoctor: finishing the report (Ctrl-C again to stop and keep the raw recording)"


class Graphdoctor:
    """``graphdoctor run`` on the script, its stderr read line by line as it comes."""

    def __init__(self, tmp_path: Path, ending: str = ""):
        (tmp_path / "script.py").write_text(textwrap.dedent(BIG_RECORDING).replace(
            "{ending}", ending))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "graphdoctor", "run", "-o", "report.json", "script.py"],
            cwd=tmp_path, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            preexec_fn=with_default_signals)
        self.lines: queue.Queue[str] = queue.Queue()
        self.said: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.put(line.rstrip("\n"))

    def script_pid(self) -> int:
        assert self.process.stdout is not None
        return int(self.process.stdout.readline())  # written once its records are

    def ctrl_c(self) -> None:
        os.kill(self.process.pid, signal.SIGINT)

    def wait_to_say(self, wanted: str) -> None:
        while wanted not in self.said:
            self.said.append(self.lines.get(timeout=120))

    def end(self) -> list[str]:
        """Every line graphdoctor said, once it has exited."""
        self.process.wait(timeout=120)
        self._reader.join(timeout=60)
        assert self.process.stdout is not None
        self.process.stdout.close()
        while not self.lines.empty():
            self.said.append(self.lines.get())
        return self.said


def script_ended(pid: int) -> None:
    wait_for(lambda: not state(pid), 60, "the script did not end")


def assert_no_traceback(said: list[str]) -> None:
    assert not [line for line in said if "Traceback" in line or "Aborted" in line], said


def test_ctrl_c_while_the_report_is_built_is_answered_and_the_report_written(
        tmp_path: Path) -> None:
    run = Graphdoctor(tmp_path)
    script_ended(run.script_pid())
    run.ctrl_c()
    said = run.end()
    assert run.process.returncode == 0, said  # the script's own exit code
    assert ANSWER in said and "graphdoctor: report written to report.json" in said
    assert load(tmp_path / "report.json").trace.status.complete
    assert_no_traceback(said)


def test_a_second_ctrl_c_stops_the_report_and_keeps_the_raw_recording(tmp_path: Path) -> None:
    run = Graphdoctor(tmp_path)
    script_ended(run.script_pid())
    run.ctrl_c()
    run.wait_to_say(ANSWER)
    run.ctrl_c()
    said = run.end()
    assert run.process.returncode == 128 + signal.SIGINT, said
    [spool] = tmp_path.glob("report.json.*.spool")
    assert (f"graphdoctor: interrupted while writing the report; the raw recording is kept "
            f"at {spool.resolve()}") in said
    assert not (tmp_path / "report.json").exists()
    assert not [p for p in tmp_path.iterdir() if p.suffix in (".tail", ".fault")]
    assert_no_traceback(said)


def test_a_second_ctrl_c_just_after_the_first_ended_the_script(tmp_path: Path) -> None:
    """The case of the issue: Ctrl-C ends the script, and the impatient second one comes
    50 ms later, while graphdoctor finishes the recording or starts the report."""
    run = Graphdoctor(tmp_path, ending=STOPS_ON_CTRL_C)
    pid = run.script_pid()
    run.ctrl_c()
    script_ended(pid)
    time.sleep(0.05)
    run.ctrl_c()
    said = run.end()
    assert run.process.returncode == 128 + signal.SIGINT, said  # the script's own
    assert ANSWER in said and "graphdoctor: report written to report.json" in said
    status = load(tmp_path / "report.json").trace.status
    assert status.signal == signal.SIGINT and status.exit_code == 130
    assert_no_traceback(said)
