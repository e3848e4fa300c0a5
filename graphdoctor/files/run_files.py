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
- for each Python process the script started that imported torch (and theirs), a spool with
  its tail and fault file (``.procPID`` before ``.spool``), named from the spool of the
  recording process it descends from: the script's, or its rank's;
- with ``--keep-spool``, the spools kept (each rank's, the baseline's, each followed
  process's), compressed where the name ends in ``.gz``, as a report is
  (:mod:`graphdoctor.files.compression`).

A name that must not be another run's (a default report name, the report of a run that found
its ``-o`` written by another run meanwhile, an in-process recording's report) is claimed
(:func:`claim`): created, empty and exclusively, with ``-2``, ``-3``... while it is taken.

A name made from another (a spool's from its report's, ``-2`` or ``.rank1`` added) is
shortened where it would pass the file system's limit of 255 bytes: a 245-character ``-o``
still gets its spool and its numbered names.

In the ground package :mod:`graphdoctor.files`, so that the recorder, the supervisor, the
reports and the commands all name files from here: torch-free, importing nothing of
graphdoctor but its errors and the rest of :mod:`graphdoctor.files`.
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
from graphdoctor.files.compression import gzipped
from graphdoctor.files.writing import created

REPORT = ".json"
SPOOL = ".spool"
TAIL = ".tail"
FAULT = ".fault"
BASELINE = ".baseline"
PROCESS = ".proc"  # a followed child's files: ".procPID" before ".spool"
OUTPUT = ".output.txt"  # the script's stdout and stderr, under a live view (run --live)
NAME_MAX = 255  # bytes in one file name, on every file system graphdoctor runs on
# The names a run's report may take; past them, a run asks to be named with -o rather than
# try on and on.
MOST_NAMES_TRIED = 1000
# More for in-process recordings: a test session records one function thousands of times
# into one folder, and has no -o.
MOST_RECORDING_NAMES = 9_999
RUN_HINT = "name this one with -o"
RECORDING_HINT = "record into another report_dir"


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
        return cls(folder / fitted(report.name, f".{os.getpid()}{SPOOL}"), nproc, keep)

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

    def of_process(self, pid: int, again: int = 1) -> RunFiles:
        """The files of process ``pid``, a child this recording followed (``.procPID``
        before ``.spool``, and before that of the spool ``--keep-spool`` keeps; its
        children's are named from this recording's too). ``again``: the how-manieth process
        of that pid in the run, where the system gave a pid out twice (``.procPID-2``)."""
        return self._marked(f"{PROCESS}{pid}" + (f"-{again}" if again > 1 else ""), nproc=1)

    def children(self) -> list[tuple[int, RunFiles]]:
        """The pid and files of every child this recording followed that made a spool (every
        rank's, in a run of ranks), in the order of their pids: regular files only, found
        beside the spools."""
        found: list[tuple[int, int, RunFiles]] = []
        for files in self.ranks():
            folder, (head, _, rest) = files.spool.parent, files.spool.name.rpartition(SPOOL)
            name = re.compile(re.escape(head + PROCESS) + _PROCESS_MARK + re.escape(SPOOL + rest))
            for match in filter(None, map(name.fullmatch, _regular_files(folder))):
                pid, again = int(match.group(1)), int(match.group(2) or 1)
                found.append((pid, again, files.of_process(pid, again)))
        return [(pid, files) for pid, _, files in sorted(found, key=lambda f: f[:2])]

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
    return path.with_name(fitted(head, f"{marker}{SPOOL}{rest}") if found
                          else fitted(path.name, marker))


def fitted(head: str, tail: str) -> str:
    """``head + tail``, ``head`` cut short where the whole would pass NAME_MAX bytes."""
    room = NAME_MAX - len(os.fsencode(tail))
    encoded = os.fsencode(head)
    if len(encoded) <= room:
        return head + tail
    return encoded[:max(room, 1)].decode("utf-8", "ignore") + tail  # no half a character


def is_process_spool(path: Path) -> bool:
    """Whether ``path`` is named as a followed process's spool is (``.procPID.spool``): a
    part of the recording beside it, never one on its own."""
    return _PROCESS_SPOOL.search(path.name) is not None


_PROCESS_MARK = "([0-9]{1,10})(?:-([0-9]{1,4}))?"  # the pid, and again where it was given twice
_PROCESS_SPOOL = re.compile(re.escape(PROCESS) + _PROCESS_MARK + re.escape(SPOOL))


def _regular_files(folder: Path) -> list[str]:
    """The names of the regular files in ``folder`` (never a link, a FIFO or a device)."""
    try:
        with os.scandir(folder) as entries:
            return [e.name for e in entries if e.is_file(follow_symlinks=False)]
    except OSError:
        return []


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
    return path.with_name(fitted(path.name[: -len(suffixes) or None], f".rank{rank}{suffixes}"))


def default_report(target: str, nproc: int) -> Path:
    """A new report in the current folder for a run of ``target`` that names none, claimed:
    named after the script and the second the run started (runs started in one second each
    get a name of their own)."""
    stem = Path(target.rstrip("/")).stem.split(".")[-1] or "run"
    first = Path(fitted(f"graphdoctor-{stem}", f"-{time.strftime('%Y%m%d-%H%M%S')}{REPORT}"))
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
    """A new report in ``folder`` for the in-process recording ``label``, claimed with its
    spool (:meth:`RunFiles.of_recording`): a spool left by an earlier recording, or a name
    planted there, is never written into."""
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", label).strip("-.")[:120] or "recording"
    return claim(folder / f"{stem}{REPORT}", last=MOST_RECORDING_NAMES, hint=RECORDING_HINT,
                 with_spool=True)


def compare_report(folder: Path, variant: str, repeat: int) -> Path:
    """Where ``compare --keep-reports`` writes a run's report (``repeat`` counts from 0, the
    name from 1)."""
    return folder / f"{variant}-{repeat + 1}{REPORT}"


# -- claiming a name --------------------------------------------------------------------------
def claim(first: Path, *, start: int = 1, last: int = MOST_NAMES_TRIED,
          named: Callable[[Path], Path] = lambda path: path, hint: str = RUN_HINT,
          with_spool: bool = False) -> Path:
    """The first of ``first``'s names that could be created, empty and exclusively, so that
    no other run, in this process or another, takes it: ``first`` itself, then ``-2``,
    ``-3``... up to ``-last`` (from ``-start``), each as ``named`` makes it; ``with_spool``:
    only a name whose in-process spool could be created too.
    UnwritableFolderError where the folder takes no file; GraphDoctorError, with ``hint``,
    once every name is taken."""
    for number in range(start, last + 1):
        path = named(numbered(first, number))
        if not _created(path):
            continue
        if not with_spool or _created(RunFiles.of_recording(path).spool):
            return path
        path.unlink()
    stem, suffix = _stem_and_suffix(first.name)
    raise GraphDoctorError(f"{last} reports named {stem}*{suffix} exist already; {hint}")


def numbered(path: Path, number: int) -> Path:
    """``path`` for 1; else ``-number`` before its suffix (``.json.gz`` counts as one)."""
    if number == 1:
        return path
    stem, suffix = _stem_and_suffix(path.name)
    return path.with_name(fitted(stem, f"-{number}{suffix}"))


def _stem_and_suffix(name: str) -> tuple[str, str]:
    suffix = "".join(Path(name).suffixes[-2:]) if gzipped(name) else Path(name).suffix
    return name[: len(name) - len(suffix)], suffix


def _created(path: Path) -> bool:
    """Whether ``path`` was created now, empty; False where something has the name."""
    try:
        return created(path)
    except OSError as error:
        raise UnwritableFolderError(path.parent, error) from None
