"""Why a file of a recording from elsewhere was not read, as the report's note and the
viewer say it: a file with no digest says so wherever it is opened, so a report without
digests reads the same on every machine."""

from __future__ import annotations

from pathlib import Path

from graphdoctor.report.source_lines import (
    NO_DIGEST,
    OTHER_MACHINE,
    OUTSIDE_FOLDER,
    RecordedElsewhere,
)
from graphdoctor.trace.model import Meta, SourceFile


def test_a_file_without_a_digest_is_refused_for_that_on_any_machine(tmp_path: Path) -> None:
    script, other = tmp_path / "train.py", tmp_path / "model.py"
    for path in (script, other):
        path.write_text("x = 1\n")
    meta = Meta(cwd=str(tmp_path), hostname="recorder",
                sources=(SourceFile(str(other), 6, "0" * 64),))
    for host in ("recorder", "reader"):
        lines = RecordedElsewhere([meta], host=host)
        assert lines(str(script), 1) == "" and lines(str(other), 1) == ""
        assert lines.refused[str(script)] == NO_DIGEST
    assert lines.refused[str(other)] == OTHER_MACHINE  # the reader's: the last host


def test_a_folder_or_file_no_file_can_have_is_refused_not_a_crash(tmp_path: Path) -> None:
    """A report's text may hold a NUL, which no path can: the folder is none, the file
    outside it."""
    cited = f"{tmp_path}/train\0.py"
    meta = Meta(cwd=f"{tmp_path}\0", hostname="here", sources=(SourceFile(cited, 6, "0" * 64),))
    lines = RecordedElsewhere([meta], host="here")
    assert lines.folders == []
    assert lines(cited, 1) == "" and lines.refused[cited] == OUTSIDE_FOLDER
