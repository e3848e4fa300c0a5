"""What the GPU transparency cases printed on a GPU, plainly and under ``graphdoctor run``,
kept as fixtures (fixtures/transparency/, written by tests/gpu/test_transparency_gpu.py with
GRAPHDOCTOR_TRANSPARENCY_OUT set): the script's memory snapshot, its torch.profiler events
and its sync debug warnings are the same both ways, on a machine without a GPU too."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import ROOT

FIXTURES = ROOT / "fixtures" / "transparency"
CASES = {f"memory_history-{history}-{options}" for history in ("recorded", "never")
         for options in ("default", "full")} | {"profiled_replays", "sync_warnings"}


def case(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / f"{name}.json").read_text())
    return data


def test_every_gpu_case_was_recorded_on_a_gpu() -> None:
    assert {p.stem for p in FIXTURES.glob("*.json")} == CASES
    for name in CASES:
        assert "NVIDIA" in case(name)["device"] and case(name)["recorded_with"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_script_printed_the_same_with_and_without_graphdoctor(name: str) -> None:
    seen = case(name)
    assert seen["plain"], "the plain run printed nothing to compare"
    assert seen["recorded"] == seen["plain"]


@pytest.mark.parametrize("options", ["default", "full"])
def test_the_scripts_own_allocator_history_kept_its_entries(options: str) -> None:
    snapshots = [json.loads(line[line.index("{"):])
                 for line in case(f"memory_history-recorded-{options}")["recorded"]]
    assert snapshots and snapshots[0]["entries"]  # the script's history held entries


def test_the_scripts_profile_holds_its_replays_and_graphdoctor_says_it_stepped_aside() -> None:
    seen = case("profiled_replays")
    events = json.loads(seen["recorded"][0][len("EVENTS "):])
    assert events["by name"]["cudaGraphLaunch"] == 10
    assert any("profiler" in note for note in seen["notes"])


def test_sync_debug_mode_and_warning_filters_hold() -> None:
    seen = case("sync_warnings")
    assert json.loads(seen["recorded"][0][len("SYNCS "):]) == {
        "caught": 1, "caught without asking": 0, "modes": [0, 1, 0], "raised under error": False}
    assert any("turn warnings into errors" in note for note in seen["notes"])

