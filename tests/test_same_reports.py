"""Every committed recording's report says what tests/golden_reports.json.gz says it did:
moving code (one owner per fact) changes nothing a user sees. A change meant to change what
reports say writes the file again (``python -m tests.golden``), and says so."""

from __future__ import annotations

import difflib

import pytest

from tests.golden import current, kept


@pytest.fixture(scope="module")
def now() -> dict[str, dict[str, str]]:
    return current()


def test_the_same_recordings_are_kept(now: dict[str, dict[str, str]]) -> None:
    assert sorted(now) == sorted(kept())


@pytest.mark.parametrize("part", ["text", "markdown", "json_sha256"])
def test_every_report_says_what_it_said(now: dict[str, dict[str, str]], part: str) -> None:
    before = kept()
    changed = [name for name in now if now[name][part] != before.get(name, {}).get(part)]
    if changed and part != "json_sha256":
        first = changed[0]
        diff = difflib.unified_diff(before.get(first, {}).get(part, "").splitlines(),
                                    now[first][part].splitlines(), "kept", "now", lineterm="")
        pytest.fail(f"{len(changed)} reports' {part} changed; {first}:\n" + "\n".join(diff))
    assert not changed, changed
