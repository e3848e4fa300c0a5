"""Where ``graphdoctor run`` writes its report and its spool, settled before the script
starts (the names themselves are :mod:`graphdoctor.trace.run_files`').

The default name carries the script's name and the second the run started. Runs started in
the same second (a sweep, a CI matrix) each get a name of their own: the name is claimed,
created empty and exclusively, at once. A folder that does not exist is an error, as it is
for every command that writes a file.

Runs told to write the same ``-o`` at once each keep their report: what the path held when a
run began is noted, and a run that finds it written by another run meanwhile writes its
report beside it, under a name of its own, and says so; a report that replaces what the
path held before the run says that too. The spool lies beside the report,
but for a report sent to a device or a FIFO (``-o /dev/null``), whose spool goes to the
temporary folder: nothing is ever created beside a device.
"""

from __future__ import annotations

import os
from pathlib import Path

from graphdoctor.errors import GraphDoctorError
from graphdoctor.report.writing import written_in_place
from graphdoctor.trace.run_files import RunFiles, default_report, report_beside, report_in_job

Identity = tuple[int, int, int, int]  # device, inode, size, modification time


def report_path(output: Path | None, target: str, nproc: int) -> Path:
    """``-o`` (with the rank inside a launcher's job), or a new default name."""
    if output is None:
        return default_report(target, nproc)
    if str(output) in ("", "."):  # `-o ""` reaches here as Path(""), which is "."
        raise GraphDoctorError("-o needs a file name")
    if not output.parent.is_dir():
        raise GraphDoctorError(f"no such folder for the report: {output.parent}")
    return report_in_job(output, nproc)


def run_files(output: Path, nproc: int, keep: Path | None) -> RunFiles:
    """The run's spools (and where ``--keep-spool`` keeps them), for a report at ``output``:
    a report written in place (a device, a FIFO, /dev/stdout) has nothing beside it."""
    return RunFiles.of_run(output, streamed=written_in_place(output), nproc=nproc, keep=keep)


def identity(path: Path) -> Identity | None:
    """What ``path`` holds now, to tell later whether another run wrote it."""
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns


def held_a_file(path: Path, seen: Identity | None) -> bool:
    """Whether ``path`` held something when the run began that its report replaced: not a
    name claimed empty for this run, not a device written in place."""
    return seen is not None and seen[2] > 0 and not written_in_place(path)


def unless_replaced(path: Path, seen: Identity | None) -> Path:
    """``path``; or, when another run wrote it since ``seen``, a new name beside it. A path
    that held nothing is claimed (created exclusively), so that of runs finishing at once
    only one takes it."""
    if written_in_place(path):
        return path
    if seen is None:
        return path if _claimed(path) else report_beside(path)
    now = identity(path)
    return path if now is None or now == seen else report_beside(path)  # gone is not written


def _claimed(path: Path) -> bool:
    """Created empty by this run; a link's target, which the report is written to."""
    try:
        Path(os.path.realpath(path)).open("xb").close()
    except FileExistsError:
        return False
    return True
