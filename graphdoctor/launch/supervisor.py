"""The parent side of ``graphdoctor run``: start the child (or one per rank), watch it, close
the spools.

The child runs in its own session and process group so that a time-out can end it and
everything it started (ranks, DataLoader workers, compile workers). The signals sent to
graphdoctor are passed on (:mod:`graphdoctor.launch.relay`); when one ends the run, whatever
the run left is ended too, and the run is marked interrupted. Were graphdoctor killed
outright, the child notices and ends itself (:mod:`graphdoctor.launch.lifeline`). With
``nproc > 1`` the ranks start through torch.distributed's own launcher (by way of
:mod:`graphdoctor.launch.launcher`), each recording to its own spool. Whatever way the run
ends, the parent appends one ``run_end`` record to every spool: the exit code, the signal,
whether it timed out or was interrupted, and the stacks faulthandler wrote for that process;
before it, whatever the child's tail file still held (:mod:`graphdoctor.trace.spool_tail`).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from graphdoctor.errors import UnwritableFolderError
from graphdoctor.launch import launcher
from graphdoctor.launch.child_process import CHILD_ENV, CHILD_MODULE, DUMP_STACKS_SIGNAL
from graphdoctor.launch.lifeline import PARENT_ENV
from graphdoctor.launch.relay import SignalRelay, send
from graphdoctor.trace import spool_records as sr
from graphdoctor.trace.endings import EXITED, INTERRUPTED, SIGNALLED, TIMED_OUT
from graphdoctor.trace.spool import append_record, read_records
from graphdoctor.trace.spool_tail import recover, tail_path

TIMEOUT_EXIT = 124
DUMP_GRACE_S = 2.0
RANK = "{rank}"
# Multicast over NVLink can take a shared host's GPUs down; leave it off unless asked.
DISTRIBUTED_DEFAULTS = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1"}


@dataclass(frozen=True)
class RunRequest:
    target: str
    args: tuple[str, ...]
    module: bool
    spool: Path  # with "{rank}" in its name when nproc > 1
    mode: str = "default"
    timeout_s: float | None = None
    argv: tuple[str, ...] = ()
    nproc: int = 1
    env: tuple[tuple[str, str], ...] = ()  # set for the script, over graphdoctor's own

    def spools(self) -> list[Path]:
        if self.nproc == 1:
            return [self.spool]
        return [Path(str(self.spool).replace(RANK, str(r))) for r in range(self.nproc)]


@dataclass(frozen=True)
class RunEnd:
    exit_code: int
    reason: str  # one of graphdoctor.trace.endings
    signal: int | None
    wall_ns: int
    spools: tuple[Path, ...] = ()


def record(request: RunRequest) -> RunEnd:
    """Run the child (or the ranks) to the end and append ``run_end`` to each spool."""
    for spool in request.spools():
        _create(spool)
        _create(_fault_file(spool))
        _create(tail_path(spool))
    started = time.perf_counter_ns()
    child = _spawn(request)
    ending = _wait(child, request)
    end = _run_end(ending, time.perf_counter_ns() - started, request.spools())
    if end.reason == INTERRUPTED:  # graphdoctor was told to stop: leave nothing running
        send(signal.SIGKILL, _groups(child, request.spools()))
    for spool in request.spools():
        fault = _fault_file(spool)
        recover(spool, tail_path(spool))  # what the child had not appended when it ended
        append_record(spool, sr.RunEnd({
            "exit_code": end.exit_code, "reason": end.reason, "signal": end.signal,
            "wall_ns": end.wall_ns, "timeout_s": request.timeout_s, "nproc": request.nproc,
            "stacks": fault.read_text(errors="replace")[-200_000:]}))
        _remove(fault)
        _remove(tail_path(spool))
    return end


def _create(path: Path) -> None:
    """Create the file empty, or fail before the script starts; another run's file is never
    written into."""
    try:
        path.open("xb").close()
    except OSError as error:
        raise UnwritableFolderError(path.parent, error) from None


def _remove(path: Path) -> None:
    try:
        path.unlink(missing_ok=True)
    except OSError:  # the folder became read-only: the file stays, the report is still made
        pass


def _fault_file(spool: Path) -> Path:
    return spool.with_suffix(".fault")


def _spawn(request: RunRequest) -> subprocess.Popen[bytes]:
    env = {**os.environ, **dict(request.env)}
    env[PARENT_ENV] = str(os.getpid())
    env[CHILD_ENV] = json.dumps({
        "spool": str(request.spool), "fault": str(_fault_file(request.spool)),
        "tail": str(tail_path(request.spool)),
        "mode": request.mode, "target": request.target, "args": list(request.args),
        "module": request.module, "argv": list(request.argv),
    })
    command = [sys.executable, *_warning_options(), "-m", CHILD_MODULE]
    if request.nproc > 1:
        for key, value in DISTRIBUTED_DEFAULTS.items():
            env.setdefault(key, value)
        command = [sys.executable, *_warning_options(), "-m", launcher.__name__, "--standalone",
                   f"--nproc-per-node={request.nproc}", "-m", CHILD_MODULE]
    return subprocess.Popen(command, env=env, start_new_session=True)


def _warning_options() -> list[str]:
    """The -W options graphdoctor's Python was given, for the script's Python as they would
    have been for it (those of PYTHONWARNINGS come first, and reach it with the environment).
    torch.distributed's launcher, like torchrun, gives the ranks none."""
    from_env = "" if sys.flags.ignore_environment else os.environ.get("PYTHONWARNINGS", "")
    inherited = [option for option in from_env.split(",") if option]
    return [f"-W{option}" for option in sys.warnoptions[len(inherited):]]


@dataclass(frozen=True)
class _Ending:
    reason: str  # EXITED, TIMED_OUT or INTERRUPTED; the return code tells a signal's death
    returncode: int
    received: int | None  # the signal graphdoctor was sent, when that ended the run


def _wait(child: subprocess.Popen[bytes], request: RunRequest) -> _Ending:
    with SignalRelay(child.pid, lambda: _groups(child, request.spools())) as relay:
        try:
            returncode = child.wait(timeout=request.timeout_s)
        except subprocess.TimeoutExpired:
            _end_hung_run(child, request.spools())
            return _Ending(TIMED_OUT, child.wait(), None)
    if relay.received is not None:
        return _Ending(INTERRUPTED, returncode, relay.received)
    return _Ending(EXITED, returncode, None)


def _end_hung_run(child: subprocess.Popen[bytes], spools: list[Path]) -> None:
    """Ask faulthandler in every recording process for all its threads' stacks, then end
    every process group of the run: the launcher, the ranks and whatever they started."""
    for pid in _recording_pids(spools) or [child.pid]:
        try:
            os.kill(pid, DUMP_STACKS_SIGNAL)
        except ProcessLookupError:
            pass
    time.sleep(DUMP_GRACE_S)
    send(signal.SIGKILL, _groups(child, spools))


def _groups(child: subprocess.Popen[bytes], spools: list[Path]) -> set[int]:
    """The child's process group, and each rank's: torch.distributed's launcher starts each
    rank in a session of its own."""
    return {child.pid, *(_group_of(pid) for pid in _recording_pids(spools))}


def _group_of(pid: int) -> int:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return pid


def _recording_pids(spools: list[Path]) -> list[int]:
    """The pid of each process that has started recording, from its spool's hello."""
    return [pid for pid in (_child_pid(s) for s in spools) if pid is not None]


def _child_pid(spool: Path) -> int | None:
    try:
        for record in read_records(spool):
            if record[0] == "hello":
                return int(record[1]["pid"])
    except (OSError, ValueError, KeyError):
        return None
    return None


def _run_end(ending: _Ending, wall_ns: int, spools: list[Path]) -> RunEnd:
    code = 128 - ending.returncode if ending.returncode < 0 else ending.returncode
    if ending.reason == TIMED_OUT:
        return RunEnd(TIMEOUT_EXIT, TIMED_OUT, signal.SIGKILL, wall_ns, tuple(spools))
    if ending.reason == INTERRUPTED:
        return RunEnd(code, INTERRUPTED, ending.received, wall_ns, tuple(spools))
    if ending.returncode < 0:
        return RunEnd(code, SIGNALLED, -ending.returncode, wall_ns, tuple(spools))
    return RunEnd(code, EXITED, None, wall_ns, tuple(spools))
