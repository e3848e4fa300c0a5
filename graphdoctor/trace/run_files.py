"""Where a run's files go: every name graphdoctor gives a file a run writes, in one place.

A run writes:

- its report: ``-o``, or a new default name (``graphdoctor-<script>-<time>.json``); inside a
  job a launcher started, where every rank runs graphdoctor, ``.rankN`` goes before its
  suffixes;
- its spool, the raw recording, and beside it two scratch files the parent reads and then
  removes: the tail (records not yet appended, :mod:`graphdoctor.trace.spool.tail`) and the
  fault file (faulthandler's stacks at a crash or a time-out);
- with ``--nproc-per-node``, a spool per rank (``.rankN`` before ``.spool``): the parent and
  each rank name it alike, from what the parent passes down (:meth:`RunFiles.plain`);
- with ``--baseline``, a spool of its own for the run with CUDA graphs off (``.baseline``);
- with ``--keep-spool``, the spools kept (each rank's, the baseline's), compressed where the
  name ends in ``.gz``, as a report is (:func:`gzipped`).

A name that must not be another run's (a default report name, the report of a run that found
its ``-o`` written by another run meanwhile, an in-process recording's report) is claimed
(:func:`claim`): created, empty and exclusively, with ``-2``, ``-3``... while it is taken.

The lowest stage, so that the recorder, the supervisor, the reports and the commands all
name files from here: torch-free, importing nothing of graphdoctor but its errors.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graphdoctor.errors import GraphDoctorError, UnwritableFolderError

REPORT = ".json"
SPOOL = ".spool"
TAIL = ".tail"
FAULT = ".fault"
BASELINE = ".baseline"
OUTPUT = ".output.txt"  # the script's stdout and stderr, under a live view (run --live)
GZIP = ".gz"
# The names a run's report may take; past them, a run asks to be named with -o rather than
# try on and on.
MOST_NAMES_TRIED = 1000
# More for in-process recordings: a test session records one function thousands of times
# into one folder, and has no -o.
MOST_RECORDING_NAMES = 9_999
RUN_HINT = "name this one with -o"
RECORDING_HINT = "record into another report_dir"


def gzipped(path: str | os.PathLike[str]) -> bool:
    """Whether a file of this name is written gzip-compressed (a report, a kept spool)."""
    return Path(path).suffix == GZIP


@dataclass(frozen=True)
class RunFiles:
    """One recording's files, each named from its spool's name. ``spool``: the spool of a
    run of one process; with ``nproc > 1``, each rank's is named from it (:meth:`ranks`).
    ``keep``: where ``--keep-spool`` keeps it (None: removed once the report is written)."""

    spool: Path
    nproc: int = 1
    keep: Path | None = None

    @classmethod
    def of_run(cls, report: Path, *, streamed: bool, nproc: int = 1,
               keep: Path | None = None) -> RunFiles:
        """``graphdoctor run``'s: beside the report, or in the temporary folder where the
        report is ``streamed`` (a device, a FIFO, /dev/stdout: nothing is ever created
        beside a device). graphdoctor's pid is in the name: runs told to write the same
        report still record apart."""
        folder = temporary_folder() if streamed else Path(os.path.realpath(report)).parent
        return cls(folder / f"{report.name}.{os.getpid()}{SPOOL}", nproc, keep)

    @classmethod
    def of_recording(cls, report: Path) -> RunFiles:
        """An in-process recording's: beside its report, whose name it has claimed."""
        return cls(report.with_name(report.name + SPOOL))

    @classmethod
    def of_compare_run(cls, folder: Path, number: int) -> RunFiles:
        """The ``number``-th run of ``graphdoctor compare``, in a folder of the compare's
        own."""
        return cls(folder / f"{number}{SPOOL}")

    @property
    def tail(self) -> Path:
        return self.spool.with_suffix(TAIL)

    @property
    def fault(self) -> Path:
        return self.spool.with_suffix(FAULT)

    def ranks(self) -> list[RunFiles]:
        """Each recording process's files: the run's own, or each rank's."""
        return [self.of_rank(rank) for rank in range(self.nproc)]

    def of_rank(self, rank: int | str) -> RunFiles:
        """The files of rank ``rank`` (``.rankN`` before ``.spool``); a run of one process
        has one set, whatever RANK says (the script may run inside someone else's job)."""
        return self if self.nproc == 1 else self._marked(f".rank{rank}", nproc=1)

    def spools(self) -> list[Path]:
        return [files.spool for files in self.ranks()]

    def baseline(self) -> RunFiles:
        """The run again with CUDA graphs off (``--baseline``): a spool of its own, kept
        beside the first's."""
        return self._marked(BASELINE, self.nproc)

    def own(self, environ: Mapping[str, str] = os.environ) -> RunFiles:
        """This recording process's files: its rank's where it is one (RANK is set by
        torch.distributed's launcher)."""
        return self.of_rank(environ.get("RANK", "0"))

    def plain(self) -> dict[str, Any]:
        """What a recording process is told, as JSON, to name its files from."""
        return {"spool": str(self.spool), "nproc": self.nproc}

    @classmethod
    def from_plain(cls, plain: Mapping[str, Any]) -> RunFiles:
        """:meth:`plain`'s files again; KeyError, TypeError or ValueError for what it never
        gives."""
        return cls(Path(plain["spool"]), int(plain["nproc"]))

    def _marked(self, marker: str, nproc: int) -> RunFiles:
        keep = None if self.keep is None else _marked(self.keep, marker)
        return RunFiles(_marked(self.spool, marker), nproc, keep)


def _marked(path: Path, marker: str) -> Path:
    """``marker`` before the name's last ``.spool`` (a kept spool may go on: ``.jsonl.gz``),
    or at its end where it has none."""
    head, found, rest = path.name.rpartition(SPOOL)
    return path.with_name(f"{head}{marker}{SPOOL}{rest}" if found else path.name + marker)


def temporary_folder() -> Path:
    """Where temporary files go, as ``tempfile`` chooses, but without its test of writing a
    file there: on a full disk that test fails, and the run must go on unrecorded."""
    candidates = [os.environ.get(name, "") for name in ("TMPDIR", "TEMP", "TMP")]
    return next((Path(c) for c in [*candidates, "/tmp", "/var/tmp"] if c and os.path.isdir(c)),
                Path.cwd())


# -- reports ----------------------------------------------------------------------------------
def report_in_job(path: Path, nproc: int, environ: Mapping[str, str] = os.environ) -> Path:
    """``path``; or, inside a job a launcher started (RANK and WORLD_SIZE set), where every
    rank runs graphdoctor and writes its own report, the rank's, ``.rankN`` before its
    suffixes. A run that starts its ranks itself (``nproc > 1``) writes one for all."""
    rank, world = environ.get("RANK"), int(environ.get("WORLD_SIZE", "1") or 1)
    if nproc > 1 or rank is None or world <= 1 or "rank" in path.name:
        return path
    suffixes = "".join(path.suffixes)
    return path.with_name(f"{path.name[: -len(suffixes) or None]}.rank{rank}{suffixes}")


def default_report(target: str, nproc: int) -> Path:
    """A new report in the current folder for a run of ``target`` that names none, claimed:
    named after the script and the second the run started (runs started in one second each
    get a name of their own)."""
    stem = Path(target.rstrip("/")).stem.split(".")[-1] or "run"
    first = Path(f"graphdoctor-{stem}-{time.strftime('%Y%m%d-%H%M%S')}{REPORT}")
    return claim(first, named=lambda path: report_in_job(path, nproc))


def job_report(given: Path) -> Path:
    """A new report in the current folder for a job combined from its ranks' files, claimed:
    named as the ranks' reports were before ``.rankN`` was added (``job.rank0.json`` gives
    ``job.json``), or after the folder they were given in."""
    name = given.resolve().name if given.is_dir() else given.name
    stem = re.sub(r"\.rank[0-9]+$", "", name.split(".json")[0].split(SPOOL)[0]) or "job"
    return claim(Path(f"{stem}{REPORT}"), hint="name it with -o")


def output_of(report: Path, *, streamed: bool) -> Path:
    """Where ``run --live`` sends the script's stdout and stderr, claimed: beside the report,
    named after it (``graphdoctor-train-20261202-013000.output.txt``); in the temporary
    folder for a report written in place (a device, a FIFO)."""
    folder = temporary_folder() if streamed else report.parent
    stem = _stem_and_suffix(report.name)[0] if not streamed else f"graphdoctor-{os.getpid()}"
    return claim(folder / f"{stem}{OUTPUT}")


def report_beside(path: Path) -> Path:
    """A new name beside ``path``, claimed, for the report of a run that found ``path``
    written by another run meanwhile."""
    return claim(path, start=2)


def recording_report(folder: Path, label: str) -> Path:
    """A new report in ``folder`` for the in-process recording ``label``, claimed."""
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", label).strip("-.")[:120] or "recording"
    return claim(folder / f"{stem}{REPORT}", last=MOST_RECORDING_NAMES, hint=RECORDING_HINT)


def compare_report(folder: Path, variant: str, repeat: int) -> Path:
    """Where ``compare --keep-reports`` writes a run's report (``repeat`` counts from 0, the
    name from 1)."""
    return folder / f"{variant}-{repeat + 1}{REPORT}"


# -- claiming a name --------------------------------------------------------------------------
def claim(first: Path, *, start: int = 1, last: int = MOST_NAMES_TRIED,
          named: Callable[[Path], Path] = lambda path: path, hint: str = RUN_HINT) -> Path:
    """The first of ``first``'s names that could be created, empty and exclusively, so that
    no other run, in this process or another, takes it: ``first`` itself, then ``-2``,
    ``-3``... up to ``-last`` (from ``-start``), each as ``named`` makes it.
    UnwritableFolderError where the folder takes no file; GraphDoctorError, with ``hint``,
    once every name is taken."""
    for number in range(start, last + 1):
        path = named(numbered(first, number))
        if _created(path):
            return path
    stem, suffix = _stem_and_suffix(first.name)
    raise GraphDoctorError(f"{last} reports named {stem}*{suffix} exist already; {hint}")


def numbered(path: Path, number: int) -> Path:
    """``path`` for 1; else ``-number`` before its suffix (``.json.gz`` counts as one)."""
    if number == 1:
        return path
    stem, suffix = _stem_and_suffix(path.name)
    return path.with_name(f"{stem}-{number}{suffix}")


def _stem_and_suffix(name: str) -> tuple[str, str]:
    suffix = "".join(Path(name).suffixes[-2:]) if gzipped(name) else Path(name).suffix
    return name[: len(name) - len(suffix)], suffix


def _created(path: Path) -> bool:
    """Whether ``path`` was created now, empty; False where something has the name."""
    try:
        path.open("x").close()
    except FileExistsError:
        return False
    except OSError as error:
        raise UnwritableFolderError(path.parent, error) from None
    return True
