"""The script never pays for graphdoctor's failures: a spool that cannot be written (a full
disk, a file-size limit) stops the recording, said once, and the script runs to its end
with its own exit code; the report, where it can be written, says where recording stopped."""

from __future__ import annotations

import errno
import json
import os
import resource
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from graphdoctor.report.io import load
from graphdoctor.trace.spool import file as spool_module
from graphdoctor.trace.spool import records as sr
from graphdoctor.trace.spool.file import SpoolWriter, read_records
from graphdoctor.trace.spool.tail import TAIL_BYTES, Pending

# A script whose warnings fill a spool: each is recorded with its stack, at once.
SCRIPT = """\
import warnings
import torch

for i in range(20000):
    warnings.warn(f"message number {i} " + "x" * 200)
print("the script reached its end")
raise SystemExit(5)
"""


def run_limited(folder: Path, file_limit: int, *options: str,
                pass_fds: tuple[int, ...] = ()) -> subprocess.CompletedProcess[str]:
    """``graphdoctor run`` with every file it (and the script) writes held to
    ``file_limit`` bytes, as ``ulimit -f`` does."""
    (folder / "script.py").write_text(SCRIPT)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_limit, file_limit))

    return subprocess.run([sys.executable, "-m", "graphdoctor", "run", *options, "script.py"],
                          cwd=folder, capture_output=True, text=True, timeout=300,
                          preexec_fn=limit, pass_fds=pass_fds)


def graphdoctor_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("graphdoctor:")]


@pytest.mark.slow
@pytest.mark.slow
def test_a_file_size_limit_stops_the_recording_not_the_script(tmp_path: Path) -> None:
    """The audit's case: the spool write failed inside the script's own warnings.warn, the
    script's exit code 5 was lost (rc 1) and no report was written."""
    done = run_limited(tmp_path, 400 * 1024, "-o", "report.json.gz")
    assert done.returncode == 5, done.stderr
    assert "the script reached its end" in done.stdout
    assert "Traceback" not in done.stderr
    stopped = [line for line in graphdoctor_lines(done.stderr) if "recording stopped" in line]
    assert len(stopped) == 1 and "(File too large)" in stopped[0]
    status = load(tmp_path / "report.json.gz").trace.status
    assert status.exit_code == 5 and not status.complete
    assert status.message.startswith("the recording stops early") and "File too large" in \
        status.message
    assert not list(tmp_path.glob("*.spool")) and not list(tmp_path.glob("*.tail"))


@pytest.mark.slow
@pytest.mark.slow
def test_with_nothing_writable_from_the_start_the_script_still_runs(tmp_path: Path) -> None:
    """As a full disk: no file can grow. The script runs, graphdoctor says it could not
    record, and the report still reaches a pipe (which no file limit holds)."""
    read_end, write_end = os.pipe()
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(os.fdopen(read_end, "rb").read()))
    reader.start()
    try:
        done = run_limited(tmp_path, 0, "-o", f"/dev/fd/{write_end}", pass_fds=(write_end,))
    finally:
        os.close(write_end)
        reader.join(timeout=60)
    assert done.returncode == 5, done.stderr
    assert "the script reached its end" in done.stdout and "Traceback" not in done.stderr
    assert [line for line in graphdoctor_lines(done.stderr) if "could not start" in line]
    report = json.loads(received[0])
    assert report["trace"]["status"]["exit_code"] == 5
    assert "File too large" in report["trace"]["status"]["message"]
    assert list(tmp_path.iterdir()) == [tmp_path / "script.py"]  # no empty spool left


def test_a_write_that_fails_stops_the_writer_quietly_but_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    writer = SpoolWriter(tmp_path / "s.spool", tail=tmp_path / "s.tail", max_delay_s=0)
    writer.write(sr.NoteRecord("first", "written"))

    def full(fd: int, data: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(spool_module, "write_all", full)
    for _ in range(3):
        writer.write(sr.NoteRecord("later", "lost"))  # raises nothing into the script
    monkeypatch.undo()
    writer.close()
    assert writer.failure is not None and "No space left on device" in writer.failure
    assert capfd.readouterr().err.count("graphdoctor: recording stopped") == 1
    assert [r[1] for r in read_records(tmp_path / "s.spool")] == ["first"]


def test_the_tail_s_blocks_are_allocated_before_it_is_written(tmp_path: Path) -> None:
    """A sparse mapped file written on a full disk ends the process with SIGBUS."""
    pending = Pending(tail=tmp_path / "s.tail")
    try:
        assert os.stat(tmp_path / "s.tail").st_blocks * 512 >= TAIL_BYTES
    finally:
        pending.close()
