"""Every compat entry against the installed torch: what it needs of torch is there (or, for
CUDA's native names on a CPU build, declared in torch's stub of torch._C), and it does what
the recorder relies on. A rename in torch fails here instead of silently dropping data."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")

from graphdoctor.record import compat  # noqa: E402 - only once torch is known to be there
from tests.record.compat_probe import EXERCISES, OK  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
NAMES = [entry.name for entry in compat.ENTRIES]


@pytest.fixture(scope="module")
def probe() -> dict[str, dict[str, Any]]:
    done = subprocess.run([sys.executable, "-m", "tests.record.compat_probe"],
                          capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    results: dict[str, dict[str, Any]] = json.loads(done.stdout.splitlines()[-1])
    return results


def test_every_entry_has_an_exercise_and_no_exercise_lacks_its_entry() -> None:
    assert len(set(NAMES)) == len(NAMES), "two entries share a name"
    assert set(EXERCISES) == set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_each_entry_says_which_torch_versions_it_was_checked_on(name: str) -> None:
    entry = next(e for e in compat.ENTRIES if e.name == name)
    assert re.search(r"\b2\.\d+", entry.checked), entry.checked


@pytest.mark.parametrize("name", NAMES)
def test_what_each_entry_needs_is_in_the_installed_torch(
        probe: dict[str, dict[str, Any]], name: str) -> None:
    result = probe[name]
    if result["unverifiable"]:
        pytest.skip(result["unverifiable"])
    assert result["missing"] == []


@pytest.mark.parametrize("name", NAMES)
def test_each_entry_does_what_the_recorder_relies_on(
        probe: dict[str, dict[str, Any]], name: str) -> None:
    outcome = probe[name]["exercise"]
    if outcome.startswith("skipped: "):
        pytest.skip(outcome)
    assert outcome == OK, outcome
