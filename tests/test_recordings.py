"""Every committed GPU recording still shows what its scenario is about (CPU only)."""

from __future__ import annotations

import pytest

from graphdoctor.trace.assemble import assemble_file
from tests.conftest import RECORDINGS, load_note
from tests.expectations import EXPECTATIONS


@pytest.mark.parametrize("name", sorted(EXPECTATIONS))
def test_recording_shows_its_scenario(name: str) -> None:
    spool = RECORDINGS / f"{name}.spool.jsonl.gz"
    assert spool.exists(), f"no recording for {name}: run fixtures/record.py on a GPU"
    EXPECTATIONS[name](assemble_file(spool), load_note(RECORDINGS, name))


def test_every_scenario_has_expectations() -> None:
    scripts = {p.stem for p in (RECORDINGS.parent / "scripts").glob("*.py")
               if not p.name.startswith("_")}
    assert scripts == set(EXPECTATIONS)
