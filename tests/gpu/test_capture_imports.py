"""graphdoctor imports nothing inside a capture: the modules a capture imports under
``graphdoctor run`` are those it imports without it (none for a manual capture; torch's
own ``make_graphed_callables`` and reduce-overhead recording import some themselves)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu
SCRIPT = Path(__file__).with_name("scripts") / "capture_imports.py"


def imported_during_capture(mode: str, tmp_path: Path, under_graphdoctor: bool) -> set[str]:
    command = [sys.executable, str(SCRIPT), mode]
    if under_graphdoctor:
        command = [sys.executable, "-m", "graphdoctor", "run", "-q", "-o",
                   str(tmp_path / f"{mode}.json"), *command[1:]]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("IMPORTS "))
    return set(json.loads(line[len("IMPORTS "):]))


@pytest.mark.parametrize("mode", ["raw", "graphed", "compile"])
def test_a_capture_imports_nothing_new_under_graphdoctor(mode: str, tmp_path: Path) -> None:
    plain = imported_during_capture(mode, tmp_path, under_graphdoctor=False)
    recorded = imported_during_capture(mode, tmp_path, under_graphdoctor=True)
    assert recorded - plain == set(), f"imported by graphdoctor inside the capture: " \
                                      f"{sorted(recorded - plain)[:20]}"
    if mode == "raw":
        assert plain == set()  # a manual capture imports nothing by itself
