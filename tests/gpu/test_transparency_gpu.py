"""Issue 19's GPU cases: a script's own allocator history, torch.profiler and sync debug mode
give it the same results under ``graphdoctor run`` (and ``--full``) as without graphdoctor.
Each runs one script of tests/gpu/scripts both ways and compares what it printed.

    python -m pytest tests/gpu/test_transparency_gpu.py --require-gpu
"""

from __future__ import annotations

import datetime
import json
import os
import sys
from pathlib import Path

import pytest

from tests.transparency.runs import Pair, plain_and_recorded

pytestmark = pytest.mark.gpu
SCRIPTS = Path(__file__).with_name("scripts")
KEEP_ENV = "GRAPHDOCTOR_TRANSPARENCY_OUT"


def printed(pair: Pair, prefix: str, case: str) -> tuple[list[str], list[str]]:
    assert pair.plain.returncode == 0, pair.plain.stderr[-3000:]
    assert pair.recorded.returncode == 0, pair.recorded.stderr[-3000:]
    plain, recorded = pair.plain.lines(prefix), pair.recorded.lines(prefix)
    keep(case, plain, recorded, notes(pair))
    return plain, recorded


def keep(case: str, plain: list[str], recorded: list[str], report_notes: list[str]) -> None:
    """With GRAPHDOCTOR_TRANSPARENCY_OUT set, write what both runs printed to a fixture
    (fixtures/transparency/CASE.json), for tests/transparency/test_recorded_on_gpu.py."""
    folder = os.environ.get(KEEP_ENV)
    if not folder:
        return
    import torch

    Path(folder).mkdir(parents=True, exist_ok=True)
    (Path(folder) / f"{case}.json").write_text(json.dumps({
        "case": case, "plain": plain, "recorded": recorded, "notes": report_notes,
        "recorded_with": f"{KEEP_ENV}=DIR python -m pytest tests/gpu/test_transparency_gpu.py "
                         "--require-gpu",
        "recorded_at": datetime.date.today().isoformat(), "torch": torch.__version__,
        "python": sys.version.split()[0], "device": torch.cuda.get_device_name(0)},
        indent=1) + "\n")


def options_id(options: tuple[str, ...]) -> str:
    return "full" if "--full" in options else "default"


def notes(pair: Pair) -> list[str]:
    """What the report lists as not recorded, and why."""
    meta = json.loads(pair.report.read_text())["trace"]["meta"]
    return [f"{note['what']}: {note['why']}" for note in meta["not_recorded"]]


@pytest.mark.parametrize("options", [(), ("--full",)], ids=["default", "full"])
@pytest.mark.parametrize("history", ["recorded", "never"])
def test_the_scripts_memory_snapshot_holds_what_it_would_without_graphdoctor(
        tmp_path: Path, options: tuple[str, ...], history: str) -> None:
    pair = plain_and_recorded(tmp_path, str(SCRIPTS / "memory_history.py"), history,
                              options=options)
    plain, recorded = printed(pair, "SNAPSHOT ", f"memory_history-{history}-{options_id(options)}")
    if history == "recorded":
        assert json.loads(plain[0].split(" ", 3)[3])["entries"], plain  # it did record some
    assert recorded == plain


def test_the_scripts_profile_holds_none_of_graphdoctors_events(tmp_path: Path) -> None:
    pair = plain_and_recorded(tmp_path, str(SCRIPTS / "profiled_replays.py"))
    plain, recorded = printed(pair, "EVENTS ", "profiled_replays")
    assert "cudaGraphLaunch" in plain[0]
    assert recorded == plain
    assert any("profiler" in note for note in notes(pair))  # its replays were left untimed


def test_the_scripts_own_sync_debug_mode_and_warnings_filters_hold(tmp_path: Path) -> None:
    pair = plain_and_recorded(tmp_path, str(SCRIPTS / "sync_warnings.py"))
    plain, recorded = printed(pair, "SYNCS ", "sync_warnings")
    assert json.loads(plain[0][len("SYNCS "):]) == {
        "caught": 1, "caught without asking": 0, "modes": [0, 1, 0], "raised under error": False}
    assert recorded == plain
    assert any("turn warnings into errors" in note for note in notes(pair))
