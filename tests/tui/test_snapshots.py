"""How each screen looks, at 80x24 and at 200x60, for a failed capture and a faster graph
(bundled GPU recordings, their diagnosis frozen in the file, so the pictures move only when
the UI does) and a distributed run (its report frozen the same way in ``reports/``, made
with ``graphdoctor.report.io.save(tests.reports.report_for(name), path)``).

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
from textual.widgets import Input

from graphdoctor.report.io import load
from graphdoctor.tui.app import GraphDoctorApp
from tests.tui.helpers import demo_app

SNAPSHOT_TEXTUAL = "8.2.8"  # snapshots differ between Textual versions
pytestmark = pytest.mark.skipif(textual.__version__ != SNAPSHOT_TEXTUAL,
                                reason=f"snapshots were made with Textual {SNAPSHOT_TEXTUAL}")

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((200, 60), id="200x60")]
RANKS_REPORT = Path(__file__).with_name("reports") / "dist_extra_allreduce_in_capture.json.gz"

SCREENS = [
    pytest.param([], id="summary"),
    pytest.param(["2"], id="findings"),
    pytest.param(["2", "enter"], id="timeline-evidence"),
    pytest.param(["3"], id="timeline-whole-run"),
    pytest.param(["4"], id="allocations"),
    pytest.param(["5"], id="graphs"),
    pytest.param(["5", "enter"], id="graph-capture"),
    pytest.param(["5", "enter", "e"], id="graph-eager-beside-replay"),
    pytest.param(["5", "slash", "c", "a", "p"], id="graphs-filtered"),
    pytest.param(["ctrl+f", "s", "y", "n", "c"], id="search"),
]


def settled(keys: Sequence[str]) -> Callable[[Pilot[Any]], Any]:
    """Press ``keys``, then wait for background work, so the picture is the final one."""

    async def run_before(pilot: Pilot[Any]) -> None:
        await pilot.press(*keys)
        await pilot.app.workers.wait_for_complete()
        for box in pilot.app.screen.query(Input):  # a blinking cursor is shown half the time
            box.cursor_blink = False
        await pilot.pause()

    return run_before


def ranks_app() -> GraphDoctorApp:
    """Two H200s; rank 1 captured an all_reduce rank 0 did not, and the run hung."""
    return GraphDoctorApp(load(RANKS_REPORT), RANKS_REPORT.name)


APPS: dict[str, Callable[[], GraphDoctorApp]] = {
    "failed": lambda: demo_app("item_in_capture"),
    "faster": lambda: demo_app("launch_bound"),
    "ranks": ranks_app,
}


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("keys", SCREENS)
@pytest.mark.parametrize("report", list(APPS))
def test_screens(snap_compare: Any, report: str, keys: list[str],
                 size: tuple[int, int]) -> None:
    """Every screen of a failed, a faster and a multi-rank report, small and large."""
    assert snap_compare(APPS[report](), terminal_size=size, run_before=settled(keys))


def test_timeline_zoomed_into_replays(snap_compare: Any) -> None:
    keys = ["3", *["n"] * 6, "z", "j", *["plus"] * 9, "enter"]
    assert snap_compare(demo_app("launch_bound"), terminal_size=(120, 32),
                        run_before=settled(keys))


@pytest.mark.parametrize("size", SIZES)
def test_help(snap_compare: Any, size: tuple[int, int]) -> None:
    assert snap_compare(demo_app(), terminal_size=size, run_before=settled(["question_mark"]))


def test_timeline_replays_opened_into_nodes_at_80x24(snap_compare: Any) -> None:
    """A replay's kernels named on the lane under its stream, the legend, the node under the
    cursor."""
    keys = ["3", "end", *["plus"] * 13, "j", "j", "j", "N", *["plus"] * 6]
    assert snap_compare(demo_app("launch_bound"), terminal_size=(80, 24),
                        run_before=settled(keys))


def test_timeline_one_replay_in_one_key_at_80x24(snap_compare: Any) -> None:
    """r: the first replay on the GPU framed, its nodes open, selected with its launch."""
    assert snap_compare(demo_app("launch_bound"), terminal_size=(80, 24),
                        run_before=settled(["3", "r", "enter"]))
