"""A spool survives its writer's death: urgent records are appended at once, batched ones
wait in the tail file the parent recovers, and reading stops cleanly where a spool was cut."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest

from graphdoctor.files.run_files import RunFiles
from graphdoctor.trace.event_kinds import GcPause, Sync
from graphdoctor.trace.spool.file import SpoolWriter, append_record, read_records
from graphdoctor.trace.spool.records import (
    URGENT,
    CompileCallback,
    CudaState,
    Devices,
    Hello,
    LogRecord,
    RunEnd,
    WarnRecord,
)
from graphdoctor.trace.spool.tail import recover

REPO = Path(__file__).resolve().parents[2]


def tags(path: Path) -> list[str]:
    return [r[0] for r in read_records(path)]


def test_post_mortem_records_are_urgent_and_the_hot_path_is_not() -> None:
    assert {LogRecord, CompileCallback, WarnRecord, Devices, CudaState} <= URGENT
    assert not {Sync, GcPause} & URGENT


def test_an_urgent_record_reaches_the_file_with_all_before_it(tmp_path: Path) -> None:
    path = tmp_path / "s.spool"
    writer = SpoolWriter(path, max_delay_s=3600)
    writer.write(GcPause(1, 2, 0, 0, 0))
    assert tags(path) == []  # batched
    writer.write(LogRecord(3, "torch._inductor.cudagraph_utils.__cudagraphs", "WARNING",
                           "skipping cudagraphs due to mutated inputs", "0/0", -1))
    assert tags(path) == ["gc", "log"]  # in the file before write() returns
    writer.close()


CHILD = """
import os, signal, sys
from graphdoctor.trace.event_kinds import GcPause, Sync
from graphdoctor.trace.spool.file import SpoolWriter
from graphdoctor.trace.spool.records import Hello
writer = SpoolWriter(sys.argv[1], tail=sys.argv[2], max_delay_s=3600)
writer.write(Hello({"version": 1}))
writer.write_many([Sync(t, "item", -1, -1, 0, -1) for t in range(1000)])
writer.write(GcPause(1000, 5, 2, 0, 0))
{ending}
"""


@pytest.mark.parametrize("ending", [
    "os.kill(os.getpid(), signal.SIGSEGV)", "os.abort()", "os._exit(3)",
    "os.kill(os.getpid(), signal.SIGKILL)"], ids=["segv", "abort", "os_exit", "kill"])
def test_batched_records_survive_the_writers_death(tmp_path: Path, ending: str) -> None:
    spool, tail = tmp_path / "s.spool", RunFiles(tmp_path / "s.spool").tail
    spool.touch()
    done = subprocess.run([sys.executable, "-c", CHILD.replace("{ending}", ending), str(spool),
                           str(tail)], env={**os.environ, "PYTHONPATH": str(REPO)},
                          capture_output=True, timeout=60)
    assert done.returncode != 0, done.stderr
    assert tags(spool) == ["hello"]  # the rest was still batched when it died
    assert recover(spool, tail) > 0
    append_record(spool, RunEnd({"exit_code": 139}))
    assert tags(spool) == ["hello", *["sync"] * 1000, "gc", "run_end"]


def test_recovery_completes_a_batch_the_writer_died_appending(tmp_path: Path) -> None:
    """Killed inside its ``os.write``: the spool has part of the batch, the tail all of it;
    recovery appends the rest, each byte once."""
    spool, tail = tmp_path / "s.spool", tmp_path / "s.tail"
    writer = SpoolWriter(spool, tail=tail, max_delay_s=3600)
    writer.write(Hello({"version": 1}))
    writer.write_many([GcPause(t, 1, 0, 0, 0) for t in range(3)])
    batch = writer._pending.take()
    with open(spool, "ab") as handle:
        handle.write(batch[:len(batch) // 2])  # the half that reached the file
    recover(spool, tail)
    assert tags(spool) == ["hello", "gc", "gc", "gc"]
    assert recover(spool, tail) == 0  # the spool now holds every pending byte
    writer.detach()


def test_recovery_appends_nothing_the_writer_appended(tmp_path: Path) -> None:
    spool, tail = tmp_path / "s.spool", tmp_path / "s.tail"
    writer = SpoolWriter(spool, tail=tail, max_delay_s=3600)
    writer.write_many([GcPause(t, 1, 0, 0, 0) for t in range(3)])
    writer.flush()
    assert recover(spool, tail) == 0
    writer.close()
    assert tags(spool) == ["gc"] * 3 and recover(spool, tail) == 0


def test_recovery_without_a_tail_is_a_no_op(tmp_path: Path) -> None:
    spool = tmp_path / "s.spool"
    spool.write_text('["hello",{}]\n')
    (tmp_path / "s.tail").touch()  # created by the parent, never mapped by a child
    assert recover(spool, tmp_path / "s.tail") == 0
    assert recover(spool, tmp_path / "missing.tail") == 0


def test_a_record_larger_than_the_tail_is_appended_whole(tmp_path: Path) -> None:
    spool = tmp_path / "s.spool"
    writer = SpoolWriter(spool, tail=tmp_path / "s.tail", max_delay_s=3600)
    writer._pending.capacity = 64  # a tail smaller than one record
    writer.write(GcPause(0, 1, 0, 0, 0))
    writer.write_many([Sync(t, "x" * 80, -1, -1, 0, -1) for t in range(2)])
    writer.close()
    assert tags(spool) == ["gc", "sync", "sync"]


def test_a_forked_writer_writes_nothing(tmp_path: Path) -> None:
    spool = tmp_path / "s.spool"
    writer = SpoolWriter(spool, tail=tmp_path / "s.tail")
    writer.detach()
    writer.write(Hello({}))
    writer.flush()
    assert spool.read_bytes() == b""


def test_a_spool_cut_mid_record_keeps_everything_before(tmp_path: Path) -> None:
    path = tmp_path / "s.spool"
    path.write_text('["hello",{"version":1}]\n["gc",1,2,0,0,0]\n["log",3,"torch._inductor.x","WAR')
    assert tags(path) == ["hello", "gc"]


@pytest.mark.parametrize("cut", [0.5, 0.9, 0.999])
def test_a_gzip_spool_cut_short_keeps_everything_before(tmp_path: Path, cut: float) -> None:
    lines = [f'["gc",{t},100,0,0,0]\n' for t in range(20_000)]
    whole = gzip.compress("".join(lines).encode())
    path = tmp_path / "s.spool.gz"
    path.write_bytes(whole[:int(len(whole) * cut)])
    got = list(read_records(path))
    assert got and [r[1] for r in got] == list(range(len(got)))  # in order, none torn
    assert len(got) >= cut * 20_000 - 2000


def test_a_damaged_gzip_spool_keeps_everything_before(tmp_path: Path) -> None:
    whole = bytearray(gzip.compress(b'["hello",{}]\n' * 50_000, compresslevel=1))
    whole[len(whole) // 2:len(whole) // 2 + 64] = b"\xff" * 64
    path = tmp_path / "s.spool.gz"
    path.write_bytes(bytes(whole))
    assert 0 < len(tags(path)) < 50_000


def test_concatenated_gzip_members_are_all_read(tmp_path: Path) -> None:
    path = tmp_path / "s.spool.gz"
    path.write_bytes(gzip.compress(b'["hello",{}]\n') + gzip.compress(b'["end",{}]\n'))
    assert tags(path) == ["hello", "end"]

