"""The parent side of ``graphdoctor run``: start the child, watch it, close the spool.

The child runs in its own process group so that a time-out can end it and everything it
started (DataLoader workers, compile workers). Ctrl-C and SIGTERM given to graphdoctor are
passed on to the child, which then writes its last records and exits as the script would.
Whatever way the child ends, the parent appends one ``run_end`` record to the spool: the
exit code, the signal, whether it timed out, and the stacks faulthandler wrote.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from graphdoctor.record.child import CHILD_ENV
from graphdoctor.trace.spool import append_record

TIMEOUT_EXIT = 124
DUMP_GRACE_S = 2.0


@dataclass(frozen=True)
class RunRequest:
    target: str
    args: tuple[str, ...]
    module: bool
    spool: Path
    mode: str = "default"
    timeout_s: float | None = None
    argv: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunEnd:
    exit_code: int
    reason: str  # exited | signal | timeout
    signal: int | None
    wall_ns: int


def record(request: RunRequest) -> RunEnd:
    """Run the child to its end and append ``run_end`` to the spool."""
    fault = request.spool.with_suffix(".fault")
    request.spool.write_bytes(b"")
    fault.write_bytes(b"")
    started = time.perf_counter_ns()
    child = _spawn(request, fault)
    reason, returncode = _wait(child, request.timeout_s)
    end = _run_end(reason, returncode, time.perf_counter_ns() - started)
    append_record(request.spool, ["run_end", {
        "exit_code": end.exit_code, "reason": end.reason, "signal": end.signal,
        "wall_ns": end.wall_ns, "timeout_s": request.timeout_s,
        "stacks": fault.read_text(errors="replace")[-200_000:]}])
    fault.unlink(missing_ok=True)
    return end


def _spawn(request: RunRequest, fault: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env[CHILD_ENV] = json.dumps({
        "spool": str(request.spool), "fault": str(fault), "mode": request.mode,
        "target": request.target, "args": list(request.args), "module": request.module,
        "argv": list(request.argv),
    })
    return subprocess.Popen([sys.executable, "-m", "graphdoctor.record.child"], env=env,
                            start_new_session=True)


def _wait(child: subprocess.Popen[bytes], timeout_s: float | None) -> tuple[str, int]:
    forward = _forward_signals(child)
    try:
        return ("exited", child.wait(timeout=timeout_s))
    except subprocess.TimeoutExpired:
        _end_hung_child(child)
        return ("timeout", child.wait())
    finally:
        forward()


def _end_hung_child(child: subprocess.Popen[bytes]) -> None:
    """Ask faulthandler for every thread's stack, then end the whole process group."""
    try:
        os.kill(child.pid, signal.SIGUSR2)
        child.wait(timeout=DUMP_GRACE_S)
    except (subprocess.TimeoutExpired, ProcessLookupError):
        pass
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _forward_signals(child: subprocess.Popen[bytes]) -> Callable[[], object]:
    def forward(signum: int, frame: object) -> None:
        try:
            os.killpg(child.pid, signum)
        except ProcessLookupError:
            pass

    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    return lambda: [signal.signal(s, h) for s, h in previous.items()]


def _run_end(reason: str, returncode: int, wall_ns: int) -> RunEnd:
    if reason == "timeout":
        return RunEnd(TIMEOUT_EXIT, "timeout", signal.SIGKILL, wall_ns)
    if returncode < 0:
        return RunEnd(128 - returncode, "signal", -returncode, wall_ns)
    return RunEnd(returncode, "exited", None, wall_ns)
