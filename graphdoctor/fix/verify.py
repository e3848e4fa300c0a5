"""Proof by running again: the patches made in a copy of the script's folder, the command
the person at the keyboard gave run there under ``graphdoctor run``, and the two reports'
verdicts and findings side by side.

What runs is never read from the report: a report is anyone's text, and "the script it
recorded" could be any program on this machine (``pip``, with arguments of the report's
choosing). The script, its arguments and the ranks come from ``fix``'s own command line,
and the command runs in the current folder.

The copy is the script's own folder (its imports of its neighbours read the patched copies);
the command runs in the current folder, so the data it reads by relative paths is where it
is. A patch to a file outside the script's folder is not in the copy: the comparison says
so rather than claim it. A finding counts as fixed only when the run again has no finding of
its rule; a verdict is compared with the verdict of the same rank's graph in the same place.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from graphdoctor.diagnose.findings import Verdict, verdict_rank
from graphdoctor.errors import GraphDoctorError
from graphdoctor.files.writing import write_file
from graphdoctor.fix.plan import FilePatch, Fix, Plan
from graphdoctor.report.document import Report
from graphdoctor.units import format_speedup

MOST_FILES = 10_000  # a script's folder, not a dataset: a bigger one is not copied
MOST_BYTES = 1 << 30
SKIPPED = shutil.ignore_patterns(".git", "__pycache__", "*.spool.jsonl*", "graphdoctor-*")
AFTER = "after.json"


@dataclass(frozen=True)
class Rerun:
    """The command to run again, as the person gave it: graphdoctor run's options, the
    script and its arguments, and the folder it runs in."""

    options: tuple[str, ...]
    script: str
    args: tuple[str, ...]
    cwd: str


@dataclass(frozen=True)
class VerdictChange:
    subject: str
    before: Verdict
    after: Verdict | None

    @property
    def worse(self) -> bool:
        return self.after is None or verdict_rank(self.after) > verdict_rank(self.before)


@dataclass(frozen=True)
class Proof:
    folder: Path  # the copy, with the report of the run again
    exit_code: int
    after: Report | None
    verdicts: tuple[VerdictChange, ...]
    fixed: tuple[tuple[Fix, bool], ...]  # each patch, and whether its finding is gone
    outside: tuple[str, ...]  # patched files the copy does not hold

    @property
    def proven(self) -> bool:
        return (self.after is not None and all(gone for _, gone in self.fixed)
                and not any(change.worse for change in self.verdicts) and not self.outside)


def copy_and_patch(plan: Plan, rerun: Rerun) -> tuple[Path, Path, tuple[str, ...]]:
    """The copy's folder, the script in it, and the patched files left outside it."""
    script = Path(os.path.realpath(os.path.join(rerun.cwd, rerun.script)))
    _check_size(script.parent)
    folder = Path(tempfile.mkdtemp(prefix="graphdoctor-fix-"))
    copy = folder / script.parent.name
    shutil.copytree(script.parent, copy, symlinks=True, ignore=SKIPPED)
    outside = tuple(patch.name for patch in plan.files
                    if not _patch_copy(patch, script.parent, copy))
    return folder, copy / script.name, outside


def _patch_copy(patch: FilePatch, original: Path, copy: Path) -> bool:
    real = Path(patch.source.path)
    if not patch.source.path or not real.is_relative_to(original):
        return False
    write_file(copy / real.relative_to(original), "".join(patch.after).encode())
    return True


def _check_size(folder: Path) -> None:
    files = size = 0
    for root, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if d not in (".git", "__pycache__")]
        files += len(names)
        size += sum(_size(os.path.join(root, name)) for name in names)
        if files > MOST_FILES or size > MOST_BYTES:
            raise GraphDoctorError(f"--verify copies the script's folder, and {folder} holds "
                                   f"more than {MOST_FILES:,} files or 1 GiB; apply the patch "
                                   "and run again yourself")


def _size(path: str) -> int:
    try:
        return os.lstat(path).st_size
    except OSError:
        return 0


def run_again(rerun: Rerun, script: Path, output: Path, timeout_s: float) -> int:
    """``graphdoctor run`` of the patched script, in ``rerun``'s folder; its output passes
    through (the script's, then graphdoctor's)."""
    try:
        return subprocess.run(command(rerun, script, output), cwd=rerun.cwd,
                              timeout=timeout_s + 60, check=False).returncode
    except subprocess.TimeoutExpired:
        return 124


def command(rerun: Rerun, script: Path, output: Path) -> list[str]:
    """What runs again: ``graphdoctor run`` of the patched copy of the script."""
    return [sys.executable, "-m", "graphdoctor", "run", "-q", "-o", str(output),
            *rerun.options, str(script), *rerun.args]


def compared(before: Report, after: Report, plan: Plan) -> tuple[
        tuple[VerdictChange, ...], tuple[tuple[Fix, bool], ...]]:
    """Each verdict beside the verdict of the same rank's graph in the same place after; each
    patch with whether a finding of its rule is left."""
    changes = tuple(VerdictChange(v.subject, v, _same_place(v, before, after))
                    for v in before.diagnosis.verdicts)
    left = {(f.id, f.rank) for f in after.diagnosis.findings}
    return changes, tuple((fix, (fix.finding.id, fix.finding.rank) not in left)
                          for fix in plan.fixes)


def _same_place(verdict: Verdict, before: Report, after: Report) -> Verdict | None:
    """The verdict of the graph (or compiled function) in the same place among its rank's:
    graph ids may change when a patch moves a line, their order does not."""
    index = _ordered(before.diagnosis.verdicts, verdict.rank).index(verdict)
    others = _ordered(after.diagnosis.verdicts, verdict.rank)
    return others[index] if index < len(others) else None


def _ordered(verdicts: Sequence[Verdict], rank: int) -> list[Verdict]:
    return sorted((v for v in verdicts if v.rank == rank), key=lambda v: (v.graph, v.function))


def said(verdict: Verdict | None) -> str:
    if verdict is None:
        return "no such graph"
    return verdict.kind + (f" {format_speedup(verdict.speedup)}" if verdict.speedup else "")
