"""The committed scripts as the files a recording names (the GPU machine's paths mapped into
this checkout): what the patchers read in tests, on any machine."""

from __future__ import annotations

from pathlib import Path

from graphdoctor.fix.source import Source
from graphdoctor.report.document import Report
from tests.reports import SCRIPTS


def read(file: str) -> Source | str:
    local = SCRIPTS / Path(file).name
    return Source(file, local.read_text()) if local.exists() else "not in fixtures/scripts"


def fixture_files(report: Report) -> object:
    return read
