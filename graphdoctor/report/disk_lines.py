"""The source lines a viewer shows: those the report kept, else those read now from disk.

A report keeps the lines its findings and captures cite (:mod:`.document`), but a viewer
also shows frames nothing cited: an allocation's stack, a sync inside a capture. Such a line
is read from this machine's disk, and only by the rule for a spool recorded elsewhere
(:class:`.source_lines.RecordedElsewhere`): a report is a stranger's text just as a spool is,
so a file is read only when the report was recorded on this host, the file is a Python file
under the recording's own folder, regular and small, and its SHA-256 is the digest the
report holds (``meta.sources``). Every answer says where its lines came from, or why the
disk was not read, in the reason the rule gives.

One :class:`ReportSources` serves a viewing session: nothing is read until a line the
report lacks is asked for, each file is read at most once, and a file the rule refuses is
never opened.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from graphdoctor.report.document import Report
from graphdoctor.report.source_lines import RecordedElsewhere

FROM_DISK = "read from disk"
UNCHANGED = "unchanged since the recording"
NOT_KEPT = "the report kept no source for this line"
CONTEXT_RADIUS = 3  # lines shown either side of the one asked for


@dataclass(frozen=True)
class Excerpt:
    """Lines of one file around a target line, and where they came from: kept in the
    report, or read from disk; with none, why the disk was not read ('' if not asked)."""

    lines: dict[int, str] = field(default_factory=dict)
    from_disk: bool = False
    refused: str = ""

    @property
    def note(self) -> str:
        """What to say beside (or, with no lines, in place of) the lines; '' for kept ones."""
        if self.from_disk:
            return f"{FROM_DISK}: {UNCHANGED}"
        if self.lines:
            return ""
        return f"{NOT_KEPT}; not {FROM_DISK}: {self.refused}" if self.refused else NOT_KEPT


def around(lines: Mapping[int, str], line: int, radius: int) -> dict[int, str]:
    """The lines of ``lines`` (number -> text) at most ``radius`` from ``line``."""
    return {number: lines[number] for number in range(line - radius, line + radius + 1)
            if number in lines}


class ReportSources:
    """A report's source lines for one viewing session: kept, or read from disk on first
    need by the rule for a recording from elsewhere (see the module doc)."""

    def __init__(self, report: Report) -> None:
        self.report = report
        self._disk: RecordedElsewhere | None = None  # made on the first line not kept

    def excerpt(self, file: str, line: int, radius: int = CONTEXT_RADIUS) -> Excerpt:
        """The lines around ``file``:``line``: the report's if it kept that line, else the
        file's on disk where the rule allows, else none and why."""
        kept = self.report.sources.get(file, {})
        if line in kept:
            return Excerpt(around(kept, line, radius))
        return self._from_disk(file, line, radius)

    def _from_disk(self, file: str, line: int, radius: int) -> Excerpt:
        disk = self.disk
        numbers = range(max(1, line - radius), line + radius + 1)
        read = {number: text.rstrip("\n") for number in numbers if (text := disk(file, number))}
        if line in read:
            return Excerpt(read, from_disk=True)
        return Excerpt(refused=disk.refused.get(file, ""))

    @property
    def disk(self) -> RecordedElsewhere:
        """The reader of every rank's files, which reads each file once and keeps why it
        refused one."""
        if self._disk is None:
            traces = [self.report.trace, *self.report.other_ranks.values()]
            self._disk = RecordedElsewhere([trace.meta for trace in traces])
        return self._disk
