"""Run a script twice, as ``python script.py`` and as ``graphdoctor run script.py``, side by
side, for the transparency tests to compare what each saw."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

SCRIPTS = Path(__file__).with_name("scripts")
TIMEOUT_S = 120


@dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str

    def lines(self, prefix: str = "") -> list[str]:
        return [line for line in self.stdout.splitlines() if line.startswith(prefix)]


@dataclass(frozen=True)
class Pair:
    plain: Run
    recorded: Run
    report: Path


def plain_and_recorded(tmp_path: Path, script: str, *args: str, python: tuple[str, ...] = (),
                       options: tuple[str, ...] = (), module: bool = False,
                       stdin: str | None = None, env: dict[str, str] | None = None) -> Pair:
    """Run ``script`` (a path, or one of ``SCRIPTS`` by name; with ``module``, ``python -m
    script``) both ways at once, with the interpreter options ``python`` and graphdoctor's
    ``options``; the recorded run writes its report into ``tmp_path``."""
    target = [script] if module else [str(SCRIPTS / script)]
    if module:
        target.insert(0, "-m")
    report = tmp_path / "report.json"
    plain = [sys.executable, *python, *target, *args]
    recorded = [sys.executable, *python, "-m", "graphdoctor", "run", "-q", "-o", str(report),
                *options, *target, *args]
    started = [_start(command, tmp_path / name, stdin, env)
               for command, name in ((plain, "plain"), (recorded, "recorded"))]
    runs = [_finish(process, stdin) for process in started]
    return Pair(runs[0], runs[1], report)


def _start(command: list[str], cwd: Path, stdin: str | None,
           env: dict[str, str] | None) -> subprocess.Popen[str]:
    cwd.mkdir(exist_ok=True)
    return subprocess.Popen(command, cwd=cwd, env={**os.environ, **(env or {})}, text=True,
                            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _finish(process: subprocess.Popen[str], stdin: str | None) -> Run:
    try:
        out, err = process.communicate(stdin, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
    return Run(process.returncode, out, err)
