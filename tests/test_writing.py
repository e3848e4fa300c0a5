"""The one writer (graphdoctor.files.writing): every file graphdoctor writes follows its rules, as
root too. A path the user names: a file replaced whole, its owner and mode kept; a link's
target written, the link kept; a device or a FIFO written in place; a block device or a
folder refused; a failure one OutputError. Writers racing onto one path lose nothing. A
file graphdoctor names itself is created new, never through a link."""

from __future__ import annotations

import errno
import os
import stat
import threading
from pathlib import Path

import pytest

from graphdoctor.errors import GraphDoctorError
from graphdoctor.files import writing
from graphdoctor.files.writing import (
    OutputError,
    create_new,
    identity,
    move_file,
    open_own,
    write_file,
    write_unless_changed,
)

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
STRANGER = 4242  # a user id no one on the machine has


def test_a_file_is_replaced_whole_and_no_temporary_is_left(tmp_path: Path) -> None:
    target = tmp_path / "r.json"
    target.write_text("old")
    assert write_file(target, b"new") == target
    assert target.read_bytes() == b"new" and [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_chunks_are_written_as_one_file(tmp_path: Path) -> None:
    write_file(tmp_path / "r", (bytes([n]) * 3 for n in range(65, 68)))
    assert (tmp_path / "r").read_bytes() == b"AAABBBCCC"


@pytest.mark.skipif(not IS_ROOT, reason="giving a file to another user needs root")
def test_a_replaced_file_keeps_its_owner_group_and_mode(tmp_path: Path) -> None:
    """As root, a colleague's report written over became root's."""
    target = tmp_path / "theirs.json"
    target.write_text("old")
    os.chown(target, STRANGER, STRANGER)
    target.chmod(0o640)
    write_file(target, b"new")
    info = target.stat()
    assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (STRANGER, STRANGER, 0o640)
    assert target.read_bytes() == b"new"


def test_a_link_s_target_is_written_and_the_link_stays(tmp_path: Path) -> None:
    (tmp_path / "shared").mkdir()
    real = tmp_path / "shared" / "r.json"
    real.write_text("old")
    link = tmp_path / "r.json"
    link.symlink_to(real)
    assert write_file(link, b"new") == real
    assert link.is_symlink() and real.read_bytes() == b"new"


def test_a_fifo_is_written_in_place(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    write_file(fifo, [b"a" * 70_000, b"b"])
    reader.join(timeout=30)
    assert stat.S_ISFIFO(fifo.stat().st_mode) and received == [b"a" * 70_000 + b"b"]


@pytest.mark.skipif(not IS_ROOT, reason="making a device node needs root")
def test_a_character_device_is_written_in_place_and_a_block_device_refused(tmp_path: Path
                                                                          ) -> None:
    null, disk = tmp_path / "null", tmp_path / "loop"
    os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    os.mknod(disk, stat.S_IFBLK | 0o600, os.makedev(7, 200))
    write_file(null, b"x")
    move_file(_spool(tmp_path), null)
    assert stat.S_ISCHR(null.stat().st_mode) and null.stat().st_rdev == os.makedev(1, 3)
    with pytest.raises(OutputError, match="block device"):
        write_file(disk, b"x")
    with pytest.raises(OutputError, match="block device"):
        move_file(_spool(tmp_path), disk)
    assert stat.S_ISBLK(disk.stat().st_mode)


def _spool(folder: Path) -> Path:
    spool = folder / "s.spool"
    spool.write_bytes(b'["hello",{}]\n')
    return spool


@pytest.mark.parametrize("name, why", [("", "an empty file name"), (".", "a folder"),
                                       ("missing/r.json", "No such file")])
def test_a_bad_path_is_one_error_of_graphdoctor_s(tmp_path: Path, name: str, why: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(OutputError, match=why) as raised:
        write_file(name, b"x")
    assert isinstance(raised.value, GraphDoctorError) and "\n" not in str(raised.value)


def test_a_full_disk_is_one_error_and_the_file_stays_as_it_was(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "r.json"
    target.write_text("old")

    def full(fd: int, data: bytes | memoryview) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(writing.os, "write", full)
    with pytest.raises(OutputError, match="No space left on device"):
        write_file(target, b"new")
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_a_name_of_245_characters_is_written(tmp_path: Path) -> None:
    """The temporary name once added 20 characters to it: 265, too long for any file."""
    target = tmp_path / ("r" * 240 + ".json")
    target.write_text("old")
    write_file(target, b"new")
    assert target.read_bytes() == b"new"


def test_a_finished_file_is_moved_in_keeping_what_it_replaces(tmp_path: Path) -> None:
    target = tmp_path / "kept.spool"
    target.write_text("old")
    target.chmod(0o600)
    spool = _spool(tmp_path)
    move_file(spool, target)
    assert not spool.exists() and target.read_bytes() == b'["hello",{}]\n'
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


# -- writers racing -----------------------------------------------------------------------------
def test_a_path_changed_since_it_was_seen_is_not_replaced(tmp_path: Path) -> None:
    target = tmp_path / "r.json"
    target.write_text("first")
    seen = identity(target)
    target.write_text("another run's")
    assert not write_unless_changed(target, b"mine", seen)
    assert target.read_text() == "another run's"
    assert write_unless_changed(target, b"mine", identity(target))
    assert target.read_text() == "mine"


def test_of_two_writers_of_a_new_path_the_first_writes_it(tmp_path: Path) -> None:
    assert write_unless_changed(tmp_path / "r.json", b"first", None)
    assert not write_unless_changed(tmp_path / "r.json", b"second", None)
    assert (tmp_path / "r.json").read_bytes() == b"first"


def test_writers_racing_onto_one_path_each_learn_whether_they_wrote_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first writer is held just before its rename: a second, which saw the same file,
    waits for it (the lock), then finds the file changed and writes nothing over it."""
    target = tmp_path / "r.json"
    target.write_text("before")
    seen = identity(target)
    renaming, go_on = threading.Event(), threading.Event()
    replace = os.replace

    def held(source: str | os.PathLike[str], dest: str | os.PathLike[str]) -> None:
        if threading.current_thread().name == "first":
            renaming.set()
            go_on.wait(30)
        replace(source, dest)

    monkeypatch.setattr(writing.os, "replace", held)
    wrote: dict[str, bool] = {}
    writers = [threading.Thread(name=name, target=lambda n=name: wrote.__setitem__(
        n, write_unless_changed(target, n.encode(), seen))) for name in ("first", "second")]
    writers[0].start()
    assert renaming.wait(30)
    writers[1].start()
    writers[1].join(timeout=1)  # it waits on the lock, not on the rename
    go_on.set()
    for writer in writers:
        writer.join(timeout=30)
    assert wrote == {"first": True, "second": False} and target.read_text() == "first"


# -- a file graphdoctor names itself ------------------------------------------------------------
def test_a_name_planted_as_a_link_is_never_written_through(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("theirs")
    planted = tmp_path / "r.json.spool"
    planted.symlink_to(victim)
    with pytest.raises(FileExistsError):
        create_new(planted)
    with pytest.raises(OSError):
        open_own(planted, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    assert victim.read_text() == "theirs"


@pytest.mark.skipif(not IS_ROOT, reason="giving a file to another user needs root")
def test_another_user_s_file_is_never_appended_to(tmp_path: Path) -> None:
    theirs = tmp_path / "r.spool"
    theirs.write_text("theirs")
    os.chown(theirs, STRANGER, STRANGER)
    with pytest.raises(PermissionError):
        open_own(theirs, os.O_WRONLY | os.O_APPEND)
    assert theirs.read_text() == "theirs"
