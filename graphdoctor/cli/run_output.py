"""Where ``graphdoctor run`` writes its report and its spool, settled before the script
starts (the names themselves are :mod:`graphdoctor.files.run_files`').

The default name carries the script's name and the second the run started. Runs started in
the same second (a sweep, a CI matrix) each get a name of their own: the name is claimed,
created empty and exclusively, at once. A folder that does not exist is an error, as it is
for every command that writes a file.

Runs told to write the same ``-o`` at once each keep their report: what the path held when a
run began is noted, and a run that finds it written by another run meanwhile writes its
report beside it, under a name of its own, and says so (decided under a lock on the file,
:func:`graphdoctor.files.writing.write_unless_changed`, so that no two runs both replace it); a
report that replaces what the path held before the run says that too.

The spool lies beside the report, but for a report sent to a device or a FIFO (``-o
/dev/null``), whose spool goes to the temporary folder: nothing is ever created beside a
device.
"""

from __future__ import annotations

from pathlib import Path

from graphdoctor.cli.output import named
from graphdoctor.errors import GraphDoctorError
from graphdoctor.files.run_files import default_report, report_beside, report_in_job
from graphdoctor.files.writing import (
    Identity,
    OutputError,
    check_writable,
    write_file,
    write_unless_changed,
)


def report_path(output: Path | None, target: str, nproc: int) -> Path:
    """``-o`` (with the rank inside a launcher's job), or a new default name; a path no
    report may be written to (a missing folder, a block device) is said before the script
    starts."""
    if output is None:
        return default_report(target, nproc)
    if not named(output).parent.is_dir():
        raise GraphDoctorError(f"no such folder for the report: {output.parent}")
    check_writable(output)
    return report_in_job(output, nproc)


def keep_path(keep: Path | None) -> Path | None:
    """``--keep-spool``'s file, checked as ``-o`` is, before the script starts."""
    if keep is None:
        return None
    try:
        check_writable(named(keep, "--keep-spool"))
    except OutputError as error:
        raise GraphDoctorError(f"--keep-spool {error}") from None
    return keep


def held_a_file(seen: Identity | None, streamed: bool) -> bool:
    """Whether the report's path held something when the run began (``seen``) that its
    report replaced: not a name claimed empty for this run, not a device written in place."""
    return seen is not None and seen[2] > 0 and not streamed


def write_report(path: Path, data: bytes, seen: Identity | None) -> Path:
    """Write the report at ``path`` unless another run wrote it since ``seen`` (what it held
    when this run began); then beside it, under a new name, which is returned."""
    if write_unless_changed(path, data, seen):
        return path
    beside = report_beside(path)
    write_file(beside, data)
    return beside
