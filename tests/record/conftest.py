"""Fixtures for tests that start recording runs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def contained_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the temporary folder of every process the test starts at its own tmp_path,
    which pytest removes: torch.distributed's launcher leaves a torchelastic_* log folder
    behind after every run."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    return tmp_path


@pytest.fixture(autouse=True, scope="module")
def whole_lines() -> Iterator[None]:
    """graphdoctor's lines on stderr as wide as they come, in this process and the runs it
    starts (which wrap at 100 columns in a pipe): these tests read what a run says; how it
    wraps is tests/report/test_columns.py's. Module-wide, so that runs a module's own
    fixtures start (once for all its tests) have it too."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("COLUMNS", "1000")
        yield
