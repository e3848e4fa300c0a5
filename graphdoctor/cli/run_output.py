"""Where ``graphdoctor run`` writes its report and its spool, settled before the script
starts.

The default name carries the script's name and the second the run started. Runs started in
the same second (a sweep, a CI matrix) each get a name of their own: the name is created,
empty and exclusively, at once, and ``-2``, ``-3``... are added while it is taken. A folder
that does not exist is an error, as it is for every command that writes a file.

Runs told to write the same ``-o`` at once each keep their report: what the path held when a
run began is noted, and a run that finds it written by another run meanwhile writes its
report beside it, under a name of its own, and says so. The spool lies beside the report,
but for a report sent to a device or a FIFO (``-o /dev/null``), whose spool goes to the
temporary folder: nothing is ever created beside a device.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from pathlib import Path

from graphdoctor.errors import GraphDoctorError, UnwritableFolderError
from graphdoctor.report.writing import written_in_place

MOST_NAMES_TRIED = 1000
Identity = tuple[int, int, int, int]  # device, inode, size, modification time


def report_path(output: Path | None, target: str, nproc: int) -> Path:
    """``-o`` (with the rank inside a launcher's job), or a new default name."""
    if output is None:
        return _claim_default(target, nproc)
    if str(output) in ("", "."):  # `-o ""` reaches here as Path(""), which is "."
        raise GraphDoctorError("-o needs a file name")
    if not output.parent.is_dir():
        raise GraphDoctorError(f"no such folder for the report: {output.parent}")
    return _with_rank(output, nproc)


def spool_path(output: Path, template: str) -> Path:
    """The run's spool: beside the report, or in the temporary folder for a report written
    in place (a device, a FIFO, /dev/stdout); ``template`` is the rank's part of the name
    ("" for one process)."""
    folder = _temporary_folder() if written_in_place(output) \
        else Path(os.path.realpath(output)).parent
    # graphdoctor's pid: runs told to write the same report still record apart
    return folder / f"{output.name}.{os.getpid()}{template}.spool"


def _temporary_folder() -> Path:
    """Where temporary files go, as ``tempfile`` chooses, but without its test of writing a
    file there: on a full disk that test fails, and the run must go on unrecorded."""
    candidates = [os.environ.get(name, "") for name in ("TMPDIR", "TEMP", "TMP")]
    return next((Path(c) for c in [*candidates, "/tmp", "/var/tmp"] if c and os.path.isdir(c)),
                Path.cwd())


def identity(path: Path) -> Identity | None:
    """What ``path`` holds now, to tell later whether another run wrote it."""
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns


def unless_replaced(path: Path, seen: Identity | None) -> Path:
    """``path``; or, when another run wrote it since ``seen``, a new name beside it."""
    now = identity(path)
    if written_in_place(path) or now is None or now == seen:  # gone since is not written since
        return path
    suffix = "".join(path.suffixes[-2:]) if path.suffix == ".gz" else path.suffix
    stem = path.name[: len(path.name) - len(suffix)]
    return _claim((path.with_name(f"{stem}-{n}{suffix}") for n in _NUMBERS[1:]),
                  f"{stem}-*{suffix}")


def _claim_default(target: str, nproc: int) -> Path:
    stem = Path(target.rstrip("/")).stem.split(".")[-1] or "run"
    name = f"graphdoctor-{stem}-{time.strftime('%Y%m%d-%H%M%S')}"
    return _claim((_with_rank(Path(f"{name}-{n}.json" if n > 1 else f"{name}.json"), nproc)
                   for n in _NUMBERS), f"{name}*.json")


_NUMBERS = range(1, MOST_NAMES_TRIED + 1)


def _claim(names: Iterable[Path], pattern: str) -> Path:
    """The first of ``names`` that could be created, empty and exclusively."""
    for path in names:
        try:
            path.open("x").close()
        except FileExistsError:
            continue
        except OSError as error:
            raise UnwritableFolderError(path.parent, error) from None
        return path
    raise GraphDoctorError(f"{MOST_NAMES_TRIED} reports named {pattern} exist already; name "
                           "this one with -o")


def _with_rank(path: Path, nproc: int) -> Path:
    """Inside a job a launcher started (RANK and WORLD_SIZE set), every rank runs graphdoctor:
    each writes its own report, named with its rank."""
    rank, world = os.environ.get("RANK"), int(os.environ.get("WORLD_SIZE", "1") or 1)
    if nproc > 1 or rank is None or world <= 1 or "rank" in path.name:
        return path
    suffixes = "".join(path.suffixes)
    return path.with_name(f"{path.name[: -len(suffixes) or None]}.rank{rank}{suffixes}")
