"""What the commands that read a report accept: any file a recording left, or several.

- a report (``graphdoctor run``'s JSON, gzip or not);
- a raw recording, a spool (``--keep-spool``'s, or a fixture's ``.spool.jsonl.gz``);
- a fixture's note (the ``.json`` beside a recording in ``fixtures/recordings``), followed
  to the recording it describes, in its own folder only;
- several of these, one per rank of a job, or a folder holding them: combined into one
  report of the job (:mod:`graphdoctor.report.job`). A folder's reports are read where it
  has any, else its spools; every other file in it is passed over.

:class:`Opened` says which files were read, for the commands to tell the user.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from graphdoctor.diagnose.view import rank_ranges, runs_text
from graphdoctor.errors import ReportError
from graphdoctor.files.run_files import is_process_spool
from graphdoctor.report import job, rank_groups
from graphdoctor.report.document import FORMAT, Report
from graphdoctor.report.io import SPOOL_START, is_spool, load, read_json, sniff

NOTE_KEYS = ("scenario", "recorded_at")  # a fixture's note, never a report's keys
SCENARIO_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
FIXTURE_SPOOL = "{name}.spool.jsonl.gz"
FIXTURE_RANK_SPOOLS = "{name}.rank*.spool.jsonl.gz"
REPORT_MARK = f'"{FORMAT}"'.encode()


@dataclass(frozen=True)
class Opened:
    """A report and the files it was read from (more than one: a job's ranks combined)."""

    report: Report
    files: tuple[Path, ...]
    given: tuple[Path, ...] = ()

    @property
    def combined(self) -> bool:
        return len(self.files) > 1

    def said(self) -> str:
        """What was read, for stderr ("" for one report file given as itself)."""
        if not self.combined:
            found = self.files[0] if self.files else None
            return "" if found is None or found in self.given else \
                f"read {found} (the recording {self.given[0]} stands for)"
        ranks = self.report.ranks
        missing = rank_groups.missing_ranks(self.report)
        gap = f"; ranks {runs_text(missing)} of the job are not among them" if missing else ""
        return (f"read ranks {rank_ranges(ranks)} from {len(self.files)} files "
                f"({_named(self.files)}){gap}")


def open_report(paths: Sequence[Path]) -> Opened:
    """The report in ``paths``: one file, or the files of one job's ranks combined."""
    if not paths:
        raise ReportError("no report given")
    files = [f for path in paths for f in _files(path)]
    loaded = [(load(f), str(f)) for f in files]
    if len(loaded) == 1:
        return Opened(loaded[0][0], tuple(files), tuple(paths))
    return Opened(job.combine(loaded), tuple(files), tuple(paths))


def _files(path: Path) -> list[Path]:
    """The recordings ``path`` stands for: itself, a note's recording, a folder's files."""
    if path.is_dir():
        return _in_folder(path)
    if not path.is_file():  # missing, a device or a FIFO: load says so, without waiting
        return [path]
    note = _note_scenario(path)
    if note is None:
        return [path]
    return _noted_recording(path, note)


def _in_folder(folder: Path) -> list[Path]:
    entries = sorted(p for p in folder.iterdir() if p.is_file() and not p.is_symlink())
    reports = [p for p in entries if _is_report(p)]
    found = reports or [p for p in entries if is_spool(p) and not is_process_spool(p)]
    if not found:
        raise ReportError(f"{folder}: no graphdoctor report or recording in this folder")
    return found


def _is_report(path: Path) -> bool:
    """Whether the file starts as a report does (its format named in its first bytes)."""
    head = sniff(path)
    return REPORT_MARK in head and not head.startswith(SPOOL_START)


def _note_scenario(path: Path) -> str | None:
    """The scenario a fixture's note describes; None for any other file."""
    if not path.name.endswith(".json") or is_spool(path) or _is_report(path):
        return None
    try:
        data = read_json(path)
    except ReportError:
        return None
    if not isinstance(data, dict) or not all(k in data for k in NOTE_KEYS):
        return None
    name = data["scenario"]
    return name if isinstance(name, str) and SCENARIO_NAME.fullmatch(name) else None


def _noted_recording(note: Path, name: str) -> list[Path]:
    folder = note.parent
    ranks = sorted(p for p in folder.glob(FIXTURE_RANK_SPOOLS.format(name=name))
                   if not is_process_spool(p))
    single = folder / FIXTURE_SPOOL.format(name=name)
    found = ranks or ([single] if single.is_file() else [])
    if not found:
        raise ReportError(f"{note}: a fixture's note, and its recording "
                          f"({single.name}) is not beside it")
    return found


def _named(paths: Sequence[Path]) -> str:
    """The files read, in a phrase for the user."""
    return ", ".join(str(p) for p in paths[:4]) + (f" and {len(paths) - 4} more"
                                                  if len(paths) > 4 else "")
