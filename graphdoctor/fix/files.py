"""The user's files, read and written only as a report from anywhere may touch them: recorded
on this machine, a Python file in the recording's own folder, with the content the recording
digested (:class:`graphdoctor.report.source_lines.RecordedElsewhere`, the rule for showing a
line, is the rule for patching one). Written only when asked, in place of the file itself
(a link's target), atomically, with its owner and permissions kept (:mod:`graphdoctor.writing`);
refused when the file changed since it was read for the patch."""

from __future__ import annotations

import os
from pathlib import Path

from graphdoctor.errors import GraphDoctorError
from graphdoctor.fix.plan import FilePatch, SourceReader
from graphdoctor.fix.source import Source
from graphdoctor.report.document import Report
from graphdoctor.report.source_lines import CHANGED_SINCE, RecordedElsewhere, read_regular
from graphdoctor.writing import write_file

NOT_TEXT = "not UTF-8 text"
UNREADABLE = "not readable"


def recorded_files(report: Report) -> SourceReader:
    traces = [report.trace, *report.other_ranks.values()]
    lines = RecordedElsewhere([trace.meta for trace in traces])

    def read(file: str) -> Source | str:
        data = lines.read(file, os.path.join(lines.cwd, file))
        if data is None:
            return lines.refused.get(file, UNREADABLE)
        try:
            return Source(file, data.decode("utf-8"))
        except UnicodeDecodeError:
            return NOT_TEXT

    return read


def write(patch: FilePatch, cwd: str) -> Path:
    """Write the patched file where the recording's file is; GraphDoctorError where it
    changed since it was read."""
    path = Path(os.path.realpath(os.path.join(cwd, patch.file)))
    now = read_regular(str(path), follow=False)
    if now is None or now.decode("utf-8", "replace") != patch.source.text:
        raise GraphDoctorError(f"{patch.name} {CHANGED_SINCE}; nothing was written to it")
    write_file(path, "".join(patch.after).encode())
    return path
