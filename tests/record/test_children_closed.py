"""The spools of the processes a run followed, closed once the run is over: each says how its
process ended as far as graphdoctor can tell, and no scratch file stays behind."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest

from graphdoctor.files.run_files import RunFiles
from graphdoctor.launch.children import (
    ENDED_BY_GRAPHDOCTOR,
    RunOver,
    close_children,
    fatal_signal,
    live_pids,
)
from graphdoctor.launch.leftovers import Leftovers
from graphdoctor.launch.process_tree import Process
from graphdoctor.trace.assemble import assemble_file
from graphdoctor.trace.endings import EXITED, SIGNALLED, TIMED_OUT, outcome
from graphdoctor.trace.spool import records as sr
from graphdoctor.trace.spool.file import SpoolWriter

HELLO = sr.Hello({"pid": 0, "target": "-c", "target_kind": "child"})
SEGV = ("Fatal Python error: Segmentation fault\n\nCurrent thread 0x00007f (most recent call "
        "first):\n  File \"<string>\", line 1 in <module>\n")


def _child(run: RunFiles, pid: int, *records: sr.SpoolRecord, fault: str = "") -> RunFiles:
    files = run.of_process(pid)
    writer = SpoolWriter(files.spool, tail=files.tail)
    for record in (HELLO, *records):
        writer.write(record)
    writer.flush()
    files.fault.write_text(fault)
    return files


def test_each_ending_is_told_and_the_scratch_files_go(tmp_path: Path) -> None:
    run = RunFiles(tmp_path / "r.json.1.spool")
    _child(run, 10, sr.End({"exit_code": 1, "interrupted": False, "wall_ns": 5}))
    _child(run, 11, fault=SEGV)
    _child(run, 12)
    _child(run, 13)
    left = Leftovers(ended=(Process(13, 1, "python3", False),))
    closed = close_children(run, RunOver(EXITED, None, left))
    assert [files.spool.name for files in closed.files] == [
        f"r.json.1.proc{pid}.spool" for pid in (10, 11, 12, 13)]
    assert sorted(p.name for p in tmp_path.iterdir()) == [f.spool.name for f in closed.files]
    exited, crashed, vanished, ended = (assemble_file(f.spool) for f in closed.files)
    assert exited.status.complete and outcome(exited) == "exited with code 1 after 5 ns"
    assert (crashed.status.reason, crashed.status.signal) == (SIGNALLED, signal.SIGSEGV)
    assert "Segmentation fault" in crashed.status.stacks_at_end
    assert not vanished.status.complete and "os._exit" in vanished.status.message
    assert ENDED_BY_GRAPHDOCTOR in {n.why for n in ended.meta.not_recorded}


def test_a_run_that_timed_out_took_its_children_with_it(tmp_path: Path) -> None:
    run = RunFiles(tmp_path / "r.json.1.spool")
    _child(run, 20)
    (files,) = close_children(run, RunOver(TIMED_OUT, 5.0)).files
    trace = assemble_file(files.spool)
    assert trace.status.reason == TIMED_OUT and "5.0 s time-out" in trace.status.message


def test_a_process_that_wrote_nothing_leaves_nothing(tmp_path: Path) -> None:
    run = RunFiles(tmp_path / "r.json.1.spool")
    files = run.of_process(30)
    for path in (files.spool, files.tail, files.fault):
        path.write_bytes(b"")
    assert close_children(run, RunOver(EXITED, None)).files == ()
    assert list(tmp_path.iterdir()) == []


def test_the_records_a_crash_left_in_the_tail_reach_the_spool(tmp_path: Path) -> None:
    run = RunFiles(tmp_path / "r.json.1.spool")
    files = run.of_process(40)
    writer = SpoolWriter(files.spool, tail=files.tail, max_delay_s=3600)
    writer.write(HELLO)
    writer.write(sr.NoteRecord("last words", "written just before the crash"))
    files.fault.write_text(SEGV)  # the process died here: its tail was never appended
    close_children(run, RunOver(EXITED, None))
    trace = assemble_file(files.spool)
    assert "written just before the crash" in {n.why for n in trace.meta.not_recorded}


def test_fatal_signals_are_read_from_faulthandlers_words() -> None:
    assert fatal_signal(SEGV) == signal.SIGSEGV
    assert fatal_signal("Fatal Python error: Aborted\n") == signal.SIGABRT
    assert fatal_signal("Thread 0x1 (most recent call first):\n") is None


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_only_followed_processes_still_below_are_asked_for_their_stacks(tmp_path: Path) -> None:
    """A pid from a spool's name alone may be another process's by now: a time-out signals
    only those still below graphdoctor."""
    run = RunFiles(tmp_path / "r.json.1.spool")
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        for pid in (sleeper.pid, 1):
            _child(run, pid)
        assert live_pids(run) == [sleeper.pid]
    finally:
        sleeper.kill()
        sleeper.wait()
