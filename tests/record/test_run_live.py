"""``graphdoctor run --live``: the viewer on a terminal (a pseudo-terminal here) while a CPU
script runs under the recorder. The script's output goes to the file beside the report, the
view says it is live, the report is written and the script's exit code passed through; Ctrl-C
in the view stops the script as Ctrl-C does without it; q leaves it running; without a
terminal the run is recorded as without --live."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # each runs graphdoctor and a script in processes of their own

SCRIPT = """
import sys, time
import torch
x = torch.ones(32, 32)
for step in range({steps}):
    print(f"step {{step}} {{float((x @ x).sum()):.0f}}", flush=True)
    time.sleep({pause})
sys.exit({code})
"""


class Terminal:
    """graphdoctor on a pseudo-terminal of 100x30: what it drew, keys typed to it."""

    def __init__(self, args: list[str], cwd: Path):
        self.leader, follower = pty.openpty()
        os.set_blocking(self.leader, False)
        env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "100", "LINES": "30"}
        self.process = subprocess.Popen([sys.executable, "-m", "graphdoctor", *args], cwd=cwd,
                                        stdin=follower, stdout=follower, stderr=follower,
                                        env=env, start_new_session=True)
        os.close(follower)
        self.drawn = b""

    def read(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            ready, _, _ = select.select([self.leader], [], [], 0.05)
            if ready:
                try:
                    self.drawn += os.read(self.leader, 1 << 16)
                except OSError:
                    return

    def until(self, done: object, most_s: float = 90.0) -> None:
        end = time.monotonic() + most_s
        while time.monotonic() < end and not done():  # type: ignore[operator]
            self.read(0.2)
        assert done(), self.drawn[-2000:]  # type: ignore[operator]

    def type(self, keys: bytes) -> None:
        os.write(self.leader, keys)

    def ended(self, most_s: float = 90.0) -> int:
        self.until(lambda: self.process.poll() is not None, most_s)
        self.read(0.3)
        os.close(self.leader)
        return self.process.returncode


def script(folder: Path, steps: int = 6, pause: float = 0.5, code: int = 3) -> str:
    (folder / "train.py").write_text(SCRIPT.format(steps=steps, pause=pause, code=code))
    return "train.py"


def test_the_view_is_live_and_the_report_takes_its_place(tmp_path: Path) -> None:
    term = Terminal(["run", "--live", "-o", "r.json", script(tmp_path)], tmp_path)
    term.until(lambda: b"live" in term.drawn)  # the bar: "● live ..."
    report = tmp_path / "r.json"
    term.until(lambda: report.exists() and report.stat().st_size > 0)
    term.read(1.5)
    term.type(b"q")
    assert term.ended() == 3  # the script's own exit code
    output = (tmp_path / "r.output.txt").read_text()
    assert output.splitlines()[:6] == [f"step {n} 32768" for n in range(6)]
    assert b"step 0" not in term.drawn  # the script's output never reached the view
    assert b"report written to r.json" in term.drawn and b"r.output.txt" in term.drawn


def test_ctrl_c_in_the_view_stops_the_script_as_it_would_without_it(tmp_path: Path) -> None:
    term = Terminal(["run", "--live", "-o", "r.json", script(tmp_path, steps=400, pause=0.1)],
                    tmp_path)
    output = tmp_path / "r.output.txt"
    term.until(lambda: output.exists() and b"step 3" in output.read_bytes())
    term.type(b"\x03")
    term.until(lambda: (tmp_path / "r.json").exists()
               and (tmp_path / "r.json").stat().st_size > 0)
    term.type(b"q")
    assert term.ended() == 130
    assert b"step 399" not in output.read_bytes()
    assert b"passed it on to the script" in term.drawn


def test_q_closes_the_view_and_the_run_goes_on_to_its_report(tmp_path: Path) -> None:
    term = Terminal(["run", "--live", "-o", "r.json", script(tmp_path, steps=12, pause=0.5,
                                                             code=0)], tmp_path)
    output = tmp_path / "r.output.txt"
    term.until(lambda: output.exists() and b"step 1" in output.read_bytes())
    term.type(b"q")
    assert term.ended() == 0
    assert b"the view is closed; the script runs on" in term.drawn
    assert b"step 11" in output.read_bytes() and (tmp_path / "r.json").stat().st_size > 0


def test_without_a_terminal_the_run_is_recorded_as_without_live(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "graphdoctor", "run", "--live", "-o", "r.json",
                           script(tmp_path, steps=2, pause=0.0)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 3, done.stderr
    assert "--live needs a terminal" in done.stderr and "step 1 32768" in done.stdout
    assert not (tmp_path / "r.output.txt").exists()
