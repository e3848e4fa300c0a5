"""How each screen looks, at 80x24 and at 160x48, on the bundled GPU recordings (their
diagnosis is frozen in the file, so the pictures move only when the UI does), and on a
distributed run's report frozen the same way in ``reports/`` (made with
``graphdoctor.report.io.save(tests.reports.report_for(name), path)``).

Regenerate after a deliberate change with ``pytest tests/tui --snapshot-update`` and look
at the SVGs; it only runs on the Textual version they were made with.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
import textual
from textual.pilot import Pilot

from graphdoctor.report.io import load
from graphdoctor.tui.app import GraphDoctorApp
from tests.tui.helpers import demo_app

RANKS_REPORT = Path(__file__).with_name("reports") / "dist_extra_allreduce_in_capture.json.gz"

SNAPSHOT_TEXTUAL = "8.2.8"  # snapshots differ between Textual versions
pytestmark = pytest.mark.skipif(textual.__version__ != SNAPSHOT_TEXTUAL,
                                reason=f"snapshots were made with Textual {SNAPSHOT_TEXTUAL}")

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((160, 48), id="160x48")]


def settled(keys: Sequence[str]) -> Callable[[Pilot[Any]], Any]:
    """Press ``keys``, then wait for background work, so the picture is the final one."""

    async def run_before(pilot: Pilot[Any]) -> None:
        await pilot.press(*keys)
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()

    return run_before


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize(("demo", "keys"), [
    pytest.param("item_in_capture", [], id="summary-failed"),
    pytest.param("launch_bound", [], id="summary-faster"),
    pytest.param("item_in_capture", ["2"], id="findings"),
    pytest.param("item_in_capture", ["2", "enter"], id="timeline-evidence"),
    pytest.param("launch_bound", ["3"], id="timeline-whole-run"),
    pytest.param("launch_bound", ["4", "c"], id="allocations-by-site"),
    pytest.param("launch_bound", ["5"], id="graphs"),
])
def test_screens(snap_compare: Any, size: tuple[int, int], demo: str, keys: list[str]) -> None:
    assert snap_compare(demo_app(demo), terminal_size=size, run_before=settled(keys))


def test_timeline_zoomed_into_replays(snap_compare: Any) -> None:
    keys = ["3", *["n"] * 6, "z", "j", *["plus"] * 9, "enter"]
    assert snap_compare(demo_app("launch_bound"), terminal_size=(120, 32),
                        run_before=settled(keys))


def test_help(snap_compare: Any) -> None:
    assert snap_compare(demo_app(), terminal_size=(80, 24),
                        run_before=settled(["question_mark"]))


def ranks_app() -> GraphDoctorApp:
    """Two H200s; rank 1 captured an all_reduce rank 0 did not, and the run hung."""
    return GraphDoctorApp(load(RANKS_REPORT), RANKS_REPORT.name)


@pytest.mark.parametrize(("size", "keys"), [
    pytest.param((80, 24), [], id="summary-80x24"),
    pytest.param((80, 24), ["3"], id="timeline-80x24"),
    pytest.param((160, 48), ["3"], id="timeline-160x48"),
    pytest.param((160, 48), ["2", "enter"], id="evidence-on-rank-1-160x48"),
])
def test_distributed_run(snap_compare: Any, size: tuple[int, int], keys: list[str]) -> None:
    assert snap_compare(ranks_app(), terminal_size=size, run_before=settled(keys))
