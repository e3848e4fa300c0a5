"""From a report to patches: each finding with a patcher, its file read as the report may read
it, the patcher's change, and the diff of each file with all its changes made. A finding that
gets no patch says why (no patcher for its rule, its file not readable and why, the code
written in a way the patcher does not know, or an overlap with an earlier patch)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from graphdoctor.diagnose.findings import Finding
from graphdoctor.fix import edits
from graphdoctor.fix.edits import Edit
from graphdoctor.fix.patchers import PATCHERS, Change, Options
from graphdoctor.fix.source import Source
from graphdoctor.report.document import Report

# A file as the report names it -> its text, or why it cannot be read.
SourceReader = Callable[[str], "Source | str"]
NO_PATCHER = "no patch is written for this rule"
NOT_KNOWN = "the code around the line is written in a way no patch is written for"
NO_LOCATION = "the finding names no line of the script"
OVERLAPS = "it would change lines an earlier patch changes"


@dataclass(frozen=True)
class Fix:
    finding: Finding
    file: str
    change: Change


@dataclass(frozen=True)
class NoFix:
    finding: Finding
    why: str


@dataclass(frozen=True)
class FilePatch:
    file: str  # as the report names it
    name: str  # relative to the recording's folder, as the diff names it
    source: Source
    edits: tuple[Edit, ...]

    @property
    def after(self) -> list[str]:
        return edits.apply(_ended(self.source.lines), self.edits)

    @property
    def diff(self) -> str:
        return edits.unified(self.name, self.source.lines, self.after)


@dataclass(frozen=True)
class Plan:
    fixes: tuple[Fix, ...]
    left: tuple[NoFix, ...]
    files: tuple[FilePatch, ...]


DEFAULTS = Options()


def plan(report: Report, read: SourceReader, options: Options = DEFAULTS,
         rules: frozenset[str] = frozenset(), folder: str = "") -> Plan:
    """The patches of the report's findings (of ``rules`` only, where given); their diffs
    name each file relative to ``folder`` (where they are to be applied; by default the
    recording's)."""
    fixes: list[Fix] = []
    left: list[NoFix] = []
    sources: dict[str, Source] = {}
    for finding in report.diagnosis.findings:
        if rules and finding.id not in rules:
            continue
        outcome = _fix(finding, read, options, sources)
        if isinstance(outcome, Fix) and not _overlaps(outcome, fixes):
            fixes.append(outcome)
        else:
            left.append(outcome if isinstance(outcome, NoFix) else NoFix(finding, OVERLAPS))
    fixes = _distinct(fixes)
    return Plan(tuple(fixes), tuple(left), _files(report, fixes, sources, folder))


def _fix(finding: Finding, read: SourceReader, options: Options,
         sources: dict[str, Source]) -> Fix | NoFix:
    patcher = PATCHERS.get(finding.id)
    if patcher is None:
        return NoFix(finding, NO_PATCHER)
    if finding.location is None:
        return NoFix(finding, NO_LOCATION)
    file = finding.location.file
    if file not in sources:
        got = read(file)
        if isinstance(got, str):
            return NoFix(finding, f"{file} cannot be patched: {got}")
        sources[file] = got
    change = patcher(finding, sources[file], options)
    return Fix(finding, file, change) if change is not None else NoFix(finding, NOT_KNOWN)


def _overlaps(fix: Fix, earlier: list[Fix]) -> bool:
    """Whether ``fix`` changes lines an earlier fix changes otherwise (an edit both make,
    such as naming one loop's variable, is made once)."""
    return any(e.file == fix.file and a != b and a.overlaps(b)
               for e in earlier for a in e.change.edits for b in fix.change.edits)


def _distinct(fixes: list[Fix]) -> list[Fix]:
    """One of each change: the ranks of a job find the same line alike."""
    seen: set[tuple[str, tuple[Edit, ...]]] = set()
    kept = []
    for fix in fixes:
        if (fix.file, fix.change.edits) not in seen:
            seen.add((fix.file, fix.change.edits))
            kept.append(fix)
    return kept


def _files(report: Report, fixes: list[Fix], sources: dict[str, Source], folder: str
           ) -> tuple[FilePatch, ...]:
    cwd = report.trace.meta.cwd
    by_file: dict[str, dict[Edit, None]] = {}
    for fix in fixes:
        by_file.setdefault(fix.file, {}).update(dict.fromkeys(fix.change.edits))
    return tuple(FilePatch(file, _named(sources[file], folder) or diff_name(file, cwd),
                           sources[file], tuple(found))
                 for file, found in by_file.items())


def _named(source: Source, folder: str) -> str:
    """The file as a diff applied in ``folder`` names it ("" without a folder)."""
    return os.path.relpath(source.path, folder) if folder and source.path else ""


def diff_name(file: str, cwd: str) -> str:
    """The file as a diff applied in the recording's folder names it."""
    path = os.path.join(cwd, file) if cwd else file
    return os.path.relpath(path, cwd) if cwd else file


def _ended(lines: list[str]) -> list[str]:
    return [line if line.endswith("\n") else line + "\n" for line in lines]


def diff_of(found: Plan, finding: Finding) -> str:
    """The diff of ``finding``'s own patch ("" where it has none), for a viewer that shows
    one finding at a time."""
    fix = next((f for f in found.fixes if f.finding == finding), None)
    patch = next((p for p in found.files if fix is not None and p.file == fix.file), None)
    if fix is None or patch is None:
        return ""
    return FilePatch(patch.file, patch.name, patch.source, fix.change.edits).diff
