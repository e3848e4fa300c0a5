"""Every committed GPU recording still shows what its scenario is about (CPU only)."""

from __future__ import annotations

import pytest

from tests.child_expectations import CHILD_EXPECTATIONS
from tests.conftest import RECORDINGS, load_note
from tests.expectations import EXPECTATIONS, RANK_EXPECTATIONS
from tests.reports import (
    AWAITING_RECORDING,
    child_traces_for,
    scenario_names,
    scenario_params,
    traces_for,
)

CHECKED = sorted(EXPECTATIONS) + sorted(RANK_EXPECTATIONS) + sorted(CHILD_EXPECTATIONS)


@pytest.mark.parametrize("name", scenario_params(CHECKED))
def test_recording_shows_its_scenario(name: str) -> None:
    assert name in scenario_names(), f"no recording for {name}: run fixtures/record.py on a GPU"
    traces, note = traces_for(name), load_note(RECORDINGS, name)
    if name in RANK_EXPECTATIONS:
        RANK_EXPECTATIONS[name](traces, note)
    elif name in CHILD_EXPECTATIONS:
        CHILD_EXPECTATIONS[name](traces[0], child_traces_for(name), note)
    else:
        assert list(traces) == [0]
        EXPECTATIONS[name](traces[0], note)


def test_every_scenario_has_expectations() -> None:
    scripts = {p.stem for p in (RECORDINGS.parent / "scripts").glob("*.py")
               if not p.name.startswith("_")}
    scripts |= {p.stem for p in (RECORDINGS.parent / "native").glob("native_*.cu")}
    assert scripts == set(CHECKED)


def test_only_unrecorded_scenarios_await_a_recording() -> None:
    """Once a scenario is recorded it leaves AWAITING_RECORDING, and its checks count."""
    assert not AWAITING_RECORDING & set(scenario_names())
    assert AWAITING_RECORDING <= set(CHECKED)
