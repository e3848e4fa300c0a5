"""The parent side of ``graphdoctor run``: start the child (or one per rank), watch it, close
the spools.

The child runs in its own session and process group so that a time-out can end it and
everything it started (ranks, DataLoader workers, compile workers). The signals sent to
graphdoctor are passed on (:mod:`graphdoctor.launch.relay`); when one ends the run, whatever
the run left is ended too, and the run is marked interrupted. Were graphdoctor killed
outright, the child notices and ends itself (:mod:`graphdoctor.launch.lifeline`). With
``nproc > 1`` the ranks start through torch.distributed's own launcher (by way of
:mod:`graphdoctor.launch.launcher`), each recording to its own spool. Every file of the run
is named by :class:`graphdoctor.files.run_files.RunFiles`, here and in each rank alike.

A script that goes on ``ESCALATE_AFTER_S`` after graphdoctor passed on SIGINT, SIGTERM or
SIGHUP (it ignores or mishandles them) is killed with SIGKILL, and the report says so: the
script was killed by SIGKILL, after the signal it did not end on. When the run is over,
whatever it left running is ended too, sessions of their own included
(:mod:`graphdoctor.launch.leftovers`): graphdoctor is a subreaper meanwhile, so the orphans
of the run come to it.

Whatever way the run ends, the parent appends one ``run_end`` record to every spool: the exit
code, the signal, whether it timed out or was interrupted, and the stacks faulthandler wrote
for that process; before it, whatever the child's tail file still held
(:mod:`graphdoctor.trace.spool.tail`) and a note for what graphdoctor had to end. The tail and
fault files are removed then, or named where they cannot be. The spools of the processes the
script started and graphdoctor followed are closed alike (:mod:`graphdoctor.launch.children`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from graphdoctor.errors import UnwritableFolderError
from graphdoctor.files.run_files import RunFiles
from graphdoctor.files.writing import create_new
from graphdoctor.launch import launcher
from graphdoctor.launch.child_process import CHILD_ENV, CHILD_MODULE, DUMP_STACKS_SIGNAL
from graphdoctor.launch.children import RunOver, close_children, live_pids
from graphdoctor.launch.leftovers import Leftovers, end_leftovers
from graphdoctor.launch.lifeline import PARENT_ENV, RECORDING_ENV
from graphdoctor.launch.notice import tell
from graphdoctor.launch.process_tree import adopting_orphans
from graphdoctor.launch.progress import ProgressLines
from graphdoctor.launch.relay import SignalRelay, send
from graphdoctor.trace.endings import EXITED, INTERRUPTED, SIGNALLED, TIMED_OUT, signal_name
from graphdoctor.trace.event_kinds import LeftRunning
from graphdoctor.trace.spool import records as sr
from graphdoctor.trace.spool.file import appended_or_kept, encoded, read_records
from graphdoctor.trace.spool.tail import unappended

TIMEOUT_EXIT = 124
DUMP_GRACE_S = 2.0
# How long a script may go on after a signal graphdoctor passed on before it is killed: time
# to save a checkpoint and close files, not to go on for good.
ESCALATE_AFTER_S = 10.0
_POLL_S = 0.1
# Multicast over NVLink can take a shared host's GPUs down; leave it off unless asked.
DISTRIBUTED_DEFAULTS = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1"}


@dataclass(frozen=True)
class RunRequest:
    target: str
    args: tuple[str, ...]
    module: bool
    files: RunFiles  # its nproc: the ranks to start, each recording to its own spool
    mode: str = "default"
    timeout_s: float | None = None
    argv: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()  # set for the script, over graphdoctor's own
    # the script's stdout goes to stderr: graphdoctor's own stdout carries JSON
    stdout_to_stderr: bool = False
    progress: bool = False  # a line now and then on a long run (graphdoctor.launch.progress)
    follow: bool = True  # record the Python processes it starts
    # (graphdoctor.record.processes.follow)
    # the script's stdout and stderr go to this file (created empty before), its stdin is
    # /dev/null: the terminal is a live view's (run --live)
    output: Path | None = None


@dataclass(frozen=True)
class RunEnd:
    exit_code: int
    reason: str  # one of graphdoctor.trace.endings; INTERRUPTED whenever graphdoctor was told
    signal: int | None  # to stop: the signal it was sent, or SIGKILL once it had to kill
    wall_ns: int
    spools: tuple[Path, ...] = ()
    # the signal passed on that the script went on after; graphdoctor then killed it
    killed_after: int | None = None
    # per spool, the records that could not be appended to it (a full disk, a file-size
    # limit): the report is built with them from memory
    unwritten: dict[Path, bytes] = field(default_factory=dict)
    children: tuple[RunFiles, ...] = ()  # the files of each process the run followed


def record(request: RunRequest, relay: SignalRelay | None = None) -> RunEnd:
    """Run the child (or the ranks) to the end, end whatever the run left running, and append
    ``run_end`` to each spool. A signal sent once the script is gone is raised again on
    return, for whoever handles it then. ``relay``: one the caller put in effect (in the main
    thread: this may then run in another), told here which run to pass signals on to."""
    spools = request.files.spools()
    for files in request.files.ranks():
        for path in (files.spool, files.fault, files.tail):
            _create(path)
    with adopting_orphans() as earlier_children:
        started = time.perf_counter_ns()
        child = _spawn(request)
        with _relaying(child, spools, relay) as relay:
            ending = _wait(child, request, relay)
            relay.run_over()
            end = _run_end(ending, time.perf_counter_ns() - started, spools)
            if end.reason == INTERRUPTED:  # graphdoctor was told to stop: leave nothing running
                send(signal.SIGKILL, _groups(child, spools))
            leftovers = end_leftovers(earlier_children)
            unwritten = close_spools(request, end, leftovers)
            followed = close_children(request.files,
                                      RunOver(end.reason, request.timeout_s, leftovers))
    return dataclasses.replace(end, unwritten={**unwritten, **followed.unwritten},
                               children=followed.files)


@contextmanager
def _relaying(child: subprocess.Popen[bytes], spools: list[Path],
              given: SignalRelay | None) -> Iterator[SignalRelay]:
    """The relay of the caller's, told of the run; else one of the run's own."""
    if given is not None:
        given.watch(child.pid, lambda: _groups(child, spools))
        yield given
        return
    with SignalRelay(child.pid, lambda: _groups(child, spools)) as relay:
        yield relay


def close_spools(request: RunRequest, end: RunEnd, leftovers: Leftovers) -> dict[Path, bytes]:
    """Append to each spool what its tail still held, graphdoctor's notes and ``run_end``;
    then remove the tail and fault files, naming those that stay. What could not be
    appended is returned, per spool, for the report to be built with."""
    if leftovers.ended:
        tell(leftovers.line())
    stuck: list[str] = []
    unwritten: dict[Path, bytes] = {}
    for index, files in enumerate(request.files.ranks()):
        notes = _notes(end, leftovers if index == 0 else Leftovers())
        run_end = _run_end_record(end, request, files.fault)
        # what the child had not appended when it ended, then graphdoctor's own records
        left, why = appended_or_kept(files.spool, unappended(files.spool, files.tail)
                                     + encoded([*notes, run_end]))
        if left:  # the last run_end read is the one that counts: it says why
            run_end.info["spool_error"] = why
            unwritten[files.spool] = left + encoded([run_end])
        stuck += [error for path in (files.fault, files.tail) if (error := _remove(path))]
    if stuck:
        tell(f"graphdoctor: could not remove {'; '.join(stuck)}; the report does not need them")
    return unwritten


def _run_end_record(end: RunEnd, request: RunRequest, fault: Path) -> sr.RunEnd:
    """A script killed after ignoring the signal passed on is recorded as killed by SIGKILL,
    the signal that ended it; the one it ignored is kept as ``passed_on``."""
    reason = SIGNALLED if end.killed_after is not None else end.reason
    return sr.RunEnd({
        "exit_code": end.exit_code, "reason": reason, "signal": end.signal,
        "passed_on": end.killed_after, "wall_ns": end.wall_ns,
        "timeout_s": request.timeout_s, "nproc": request.files.nproc,
        "stacks": _read(fault)[-200_000:]})


def _notes(end: RunEnd, leftovers: Leftovers) -> list[sr.SpoolRecord]:
    """graphdoctor's own records of the run's end: how it had to end the script, and what
    it left running."""
    notes: list[sr.SpoolRecord] = []
    if end.killed_after is not None:
        notes.append(sr.NoteRecord("the end of the run", (
            f"graphdoctor was sent {signal_name(end.killed_after)} and passed it on, but the "
            f"script went on for {ESCALATE_AFTER_S:g} s, so graphdoctor killed it with "
            "SIGKILL: the records it would have written on ending are missing")))
    return notes + [LeftRunning(end.wall_ns, p.pid, p.name, int(p.pid in leftovers.remaining))
                    for p in leftovers.ended]


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _create(path: Path) -> None:
    """Create the file empty, or fail before the script starts; another run's file is never
    written into."""
    try:
        os.close(create_new(path))
    except OSError as error:
        raise UnwritableFolderError(path.parent, error) from None


def _remove(path: Path) -> str:
    """Remove the file; "" once it is gone, else the file and why it stays (a folder
    made read-only meanwhile): the report is made all the same."""
    try:
        path.unlink(missing_ok=True)
    except OSError as error:
        return f"{path} ({error.strerror or error})"
    return ""


def _spawn(request: RunRequest) -> subprocess.Popen[bytes]:
    env = {**os.environ, **dict(request.env)}
    env[PARENT_ENV] = str(os.getpid())
    files = request.files.plain()  # each recording process names its own files from them
    env[RECORDING_ENV] = json.dumps(files)  # for the lifeline, should graphdoctor be killed
    env[CHILD_ENV] = json.dumps({
        "files": files, "mode": request.mode, "target": request.target,
        "args": list(request.args), "module": request.module, "argv": list(request.argv),
        "follow": request.follow,
    })
    command = [sys.executable, *_warning_options(), "-m", CHILD_MODULE]
    if request.files.nproc > 1:
        for key, value in DISTRIBUTED_DEFAULTS.items():
            env.setdefault(key, value)
        command = [sys.executable, *_warning_options(), "-m", launcher.__name__, "--standalone",
                   f"--nproc-per-node={request.files.nproc}", "-m", CHILD_MODULE]
    if request.output is not None:
        return _spawn_to_file(command, env, request.output)
    stdout = _stderr_fd() if request.stdout_to_stderr else None
    return subprocess.Popen(command, env=env, start_new_session=True, stdout=stdout)


def _spawn_to_file(command: list[str], env: dict[str, str],
                   output: Path) -> subprocess.Popen[bytes]:
    """The child with its stdout and stderr appended to ``output`` (the empty file claimed
    for them; a link there is not followed) and its stdin /dev/null."""
    try:
        fd = os.open(output, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as error:
        raise UnwritableFolderError(output.parent, error) from None
    try:
        return subprocess.Popen(command, env=env, start_new_session=True, stdin=subprocess.DEVNULL,
                                stdout=fd, stderr=fd)
    finally:
        os.close(fd)


def _stderr_fd() -> int:
    """The file descriptor of stderr: the process's own where sys.stderr is not a file (a
    test's capture)."""
    try:
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError
        return 2


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
    escalated: bool = False  # the script went on after it, and graphdoctor killed it


def _wait(child: subprocess.Popen[bytes], request: RunRequest, relay: SignalRelay) -> _Ending:
    started = time.monotonic()
    deadline = None if request.timeout_s is None else started + request.timeout_s
    lines = ProgressLines(request.files.spools()) if request.progress else None
    while (returncode := _returncode(child)) is None:
        if lines is not None:
            lines.tick(time.monotonic() - started)
        if deadline is not None and time.monotonic() >= deadline:
            _end_hung_run(child, request.files)
            return _Ending(TIMED_OUT, child.wait(), None)
        if (ignored := relay.unheeded(ESCALATE_AFTER_S)) is not None:
            return _escalate(child, request.files.spools(), ignored)
    if relay.received is not None:
        return _Ending(INTERRUPTED, returncode, relay.received)
    return _Ending(EXITED, returncode, None)


def _returncode(child: subprocess.Popen[bytes]) -> int | None:
    """The child's return code, or None while it runs on after a short wait (the signals
    passed on are handled meanwhile)."""
    try:
        return child.wait(timeout=_POLL_S)
    except subprocess.TimeoutExpired:
        return None


def _escalate(child: subprocess.Popen[bytes], spools: list[Path], ignored: int) -> _Ending:
    """SIGKILL every process group of a run that went on after ``ignored`` was passed on."""
    tell(f"graphdoctor: the script went on {ESCALATE_AFTER_S:g} s after {signal_name(ignored)};"
         " killing it (SIGKILL)")
    send(signal.SIGKILL, _groups(child, spools))
    returncode = child.wait()
    return _Ending(INTERRUPTED, returncode, ignored, escalated=returncode == -signal.SIGKILL)


def _end_hung_run(child: subprocess.Popen[bytes], files: RunFiles) -> None:
    """Ask faulthandler in every recording process (the processes followed too) for all its
    threads' stacks, then end every process group of the run: the launcher, the ranks and
    whatever they started."""
    spools = files.spools()
    for pid in [*(_recording_pids(spools) or [child.pid]), *live_pids(files)]:
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
    if ending.escalated:
        return RunEnd(code, INTERRUPTED, signal.SIGKILL, wall_ns, tuple(spools),
                      killed_after=ending.received)
    if ending.reason == INTERRUPTED:
        return RunEnd(code, INTERRUPTED, ending.received, wall_ns, tuple(spools))
    if ending.returncode < 0:
        return RunEnd(code, SIGNALLED, -ending.returncode, wall_ns, tuple(spools))
    return RunEnd(code, EXITED, None, wall_ns, tuple(spools))
