"""The viewer's tests read the patches of the committed scripts, whatever this machine holds
at the paths the GPU machine recorded (graphdoctor fix's own policy is tested in tests/fix)."""

from __future__ import annotations

import pytest

from tests.fix.fixture_files import fixture_files


@pytest.fixture(autouse=True)
def patches_from_the_committed_scripts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("graphdoctor.tui.report_view.recorded_files", fixture_files)
