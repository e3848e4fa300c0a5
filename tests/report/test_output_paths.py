"""``-o`` writes only what it should, as root too: a file atomically, a device or a FIFO in
place, a link's target (the link stays), never a block device or a folder."""

from __future__ import annotations

import json
import os
import resource
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from graphdoctor.cli import main
from graphdoctor.files.writing import OutputError, write_file
from graphdoctor.report import io
from tests.conftest import ROOT
from tests.report.jobs import rank_file

DEMO = ROOT / "graphdoctor" / "demo" / "launch_bound.json.gz"
# Every command that writes a file with -o, and what it writes.
WRITERS = {"export": ["export", str(DEMO)], "report": ["report", "-f", "json", str(DEMO)],
           "diff": ["diff", "-f", "json", str(DEMO), str(DEMO)]}
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def write_with(command: str, output: str | Path) -> Result:
    return CliRunner().invoke(main, [*WRITERS[command], "-o", str(output)],
                              catch_exceptions=False)


@pytest.mark.parametrize("command", WRITERS)
def test_a_symlink_s_target_is_written_and_the_link_stays(tmp_path: Path, command: str) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "result.json").write_text("old")
    link = tmp_path / "result.json"
    link.symlink_to(shared / "result.json")
    assert write_with(command, link).exit_code == 0
    assert link.is_symlink() and os.readlink(link) == str(shared / "result.json")
    assert (shared / "result.json").read_text() not in ("old", "")


@pytest.mark.parametrize("command", WRITERS)
def test_a_fifo_is_written_in_place(tmp_path: Path, command: str) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    assert write_with(command, fifo).exit_code == 0
    reader.join(timeout=60)
    assert stat.S_ISFIFO(fifo.stat().st_mode) and len(received[0]) > 100


@pytest.mark.skipif(not Path("/dev/null").exists(), reason="needs /dev/null")
@pytest.mark.parametrize("command", WRITERS)
def test_dev_null_stays_a_device(command: str) -> None:
    """As root, the audit's ``export -o /dev/null`` replaced the machine's /dev/null."""
    before = os.stat("/dev/null")
    assert write_with(command, "/dev/null").exit_code == 0
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and (after.st_ino, after.st_rdev) == (
        before.st_ino, before.st_rdev)


@pytest.mark.skipif(not IS_ROOT, reason="making a device node needs root")
def test_a_device_node_is_written_in_place_as_root(tmp_path: Path) -> None:
    null = tmp_path / "null"
    os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # what /dev/null is
    assert write_with("export", null).exit_code == 0
    assert stat.S_ISCHR(null.stat().st_mode) and null.stat().st_rdev == os.makedev(1, 3)


@pytest.mark.skipif(not IS_ROOT, reason="making a device node needs root")
def test_a_block_device_is_refused_in_one_line(tmp_path: Path) -> None:
    disk = tmp_path / "loop"
    os.mknod(disk, stat.S_IFBLK | 0o600, os.makedev(7, 200))  # a loop device, unattached
    result = write_with("report", disk)
    assert result.exit_code == 2 and "block device" in result.stderr
    assert result.stderr.count("\n") == 1 and stat.S_ISBLK(disk.stat().st_mode)


def test_a_file_is_replaced_whole_keeping_its_permissions(tmp_path: Path) -> None:
    target = tmp_path / "r.json"
    target.write_text("old")
    target.chmod(0o600)
    io.save(io.load(DEMO), target)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert io.load(target).trace.meta.target == io.load(DEMO).trace.meta.target
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]  # no temporary left


def test_an_empty_name_is_a_usage_error() -> None:
    result = write_with("export", "")
    assert result.exit_code == 2 and result.stderr == "graphdoctor: error: -o needs a file name\n"


def test_a_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(OutputError, match="a folder"):
        write_file(tmp_path, b"{}")


@pytest.mark.skipif(not IS_ROOT, reason="giving a file to another user needs root")
@pytest.mark.parametrize("command", WRITERS)
def test_a_replaced_file_keeps_its_owner(tmp_path: Path, command: str) -> None:
    """As root, a colleague's report written over became root's."""
    theirs = tmp_path / "theirs.json"
    theirs.write_text("old")
    os.chown(theirs, 4242, 4242)
    theirs.chmod(0o664)
    assert write_with(command, theirs).exit_code == 0
    info = theirs.stat()
    assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (4242, 4242, 0o664)
    assert theirs.read_text() != "old"


@pytest.mark.parametrize("command", WRITERS)
def test_a_name_of_245_characters_is_written(tmp_path: Path, command: str) -> None:
    """Its temporary name had 20 characters more: too long for any file system."""
    long = tmp_path / ("r" * 240 + ".json")
    long.write_text("old")
    result = write_with(command, long)
    assert result.exit_code == 0, result.output
    assert long.read_text() != "old"


MERGE = ["merge", rank_file(0), rank_file(1), "-o"]


@pytest.mark.parametrize("output, said", [("", "-o needs a file name"),
                                          ("missing/job.json", "no such folder")])
def test_merge_onto_a_bad_path_is_one_line(tmp_path: Path, output: str, said: str,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Each ended in a traceback."""
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, [*MERGE, output])
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit), result.output
    assert result.stderr.startswith("graphdoctor: error: ") and said in result.stderr
    assert result.stderr.count("\n") == 1 and list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not IS_ROOT, reason="making a device node needs root")
def test_merge_onto_a_block_device_is_one_line(tmp_path: Path) -> None:
    disk = tmp_path / "loop"
    os.mknod(disk, stat.S_IFBLK | 0o600, os.makedev(7, 200))
    result = CliRunner().invoke(main, [*MERGE, str(disk)])
    assert result.exit_code == 2 and "block device" in result.stderr
    assert result.stderr.count("\n") == 1 and stat.S_ISBLK(disk.stat().st_mode)


@pytest.mark.parametrize("command", ["merge", "report"])
def test_a_file_that_outgrows_the_disk_is_one_line(tmp_path: Path, command: str) -> None:
    """A file-size limit stands for a full disk: the write fails part way."""
    args = MERGE if command == "merge" else [*WRITERS["report"], "-o"]
    done = subprocess.run([sys.executable, "-m", "graphdoctor", *args, "out.json"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE,
                                                                (4096, 4096)))
    assert done.returncode == 2, done.stderr
    last = done.stderr.splitlines()[-1]  # merge says first which ranks it read
    assert last.startswith("graphdoctor: error: ") and "Traceback" not in done.stderr
    assert "File too large" in last and list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not Path("/dev/fd").exists(), reason="needs /dev/fd")
@pytest.mark.parametrize("output, redirect", [("/dev/stdout", ">>"), ("/dev/fd/3", "3>>")])
def test_a_descriptor_of_its_own_is_written_as_it_is_open(tmp_path: Path, output: str,
                                                          redirect: str) -> None:
    """`-o /dev/stdout >> log` appends to the log, as the shell opened it: resolved whole,
    the path names the log itself, which an atomic write would replace."""
    log = tmp_path / "log.txt"
    log.write_text("first\n")
    done = subprocess.run(f"{sys.executable} -m graphdoctor {' '.join(WRITERS['report'])} "
                          f"-o {output} {redirect} {log}", shell=True, stderr=subprocess.PIPE,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    first, report = log.read_text().split("\n", 1)
    assert first == "first" and json.loads(report)["format"] == "graphdoctor-report"


def test_a_report_to_a_pipe_through_dev_stdout() -> None:
    done = subprocess.run(f"{sys.executable} -m graphdoctor {' '.join(WRITERS['report'])} "
                          "-o /dev/stdout | wc -c", shell=True, capture_output=True, text=True,
                          timeout=120)
    assert int(done.stdout) > 1000, done.stderr
