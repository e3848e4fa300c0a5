"""Where ``graphdoctor run`` writes its report, settled before the script starts.

The default name carries the script's name and the second the run started. Runs started in
the same second (a sweep, a CI matrix) each get a name of their own: the name is created,
empty and exclusively, at once, and ``-2``, ``-3``... are added while it is taken. A folder
that does not exist is an error, as it is for every command that writes a file.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from graphdoctor.errors import GraphDoctorError, UnwritableFolderError

MOST_NAMES_TRIED = 1000


def report_path(output: Path | None, target: str, nproc: int) -> Path:
    """``-o`` (with the rank inside a launcher's job), or a new default name."""
    if output is None:
        return _claim_default(target, nproc)
    if not output.parent.is_dir():
        raise GraphDoctorError(f"no such folder for the report: {output.parent}")
    return _with_rank(output, nproc)


def _claim_default(target: str, nproc: int) -> Path:
    stem = Path(target.rstrip("/")).stem.split(".")[-1] or "run"
    name = f"graphdoctor-{stem}-{time.strftime('%Y%m%d-%H%M%S')}"
    for number in range(1, MOST_NAMES_TRIED + 1):
        path = _with_rank(Path(f"{name}-{number}.json" if number > 1 else f"{name}.json"), nproc)
        try:
            path.open("x").close()
        except FileExistsError:
            continue
        except OSError as error:
            raise UnwritableFolderError(path.parent, error) from None
        return path
    raise GraphDoctorError(f"{MOST_NAMES_TRIED} reports named {name}*.json exist already; "
                           "name this one with -o")


def _with_rank(path: Path, nproc: int) -> Path:
    """Inside a job a launcher started (RANK and WORLD_SIZE set), every rank runs graphdoctor:
    each writes its own report, named with its rank."""
    rank, world = os.environ.get("RANK"), int(os.environ.get("WORLD_SIZE", "1") or 1)
    if nproc > 1 or rank is None or world <= 1 or "rank" in path.name:
        return path
    suffixes = "".join(path.suffixes)
    return path.with_name(f"{path.name[: -len(suffixes) or None]}.rank{rank}{suffixes}")
