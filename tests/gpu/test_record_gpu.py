"""The recorder end to end on a real GPU: record every scenario afresh and check it.

    pytest tests/gpu --require-gpu [--record-dir fixtures/recordings]
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from graphdoctor.trace.assemble import assemble_file
from tests.child_expectations import CHILD_EXPECTATIONS
from tests.conftest import ROOT, load_note
from tests.expectations import EXPECTATIONS, RANK_EXPECTATIONS
from tests.reports import child_traces_for, spools

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="session")
def recordings(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    chosen = request.config.getoption("--record-dir")
    out = Path(chosen) if chosen else tmp_path_factory.mktemp("recordings")
    if not (chosen and request.config.getoption("--use-recordings")):
        subprocess.run([sys.executable, str(ROOT / "fixtures" / "record.py"), "--out", str(out)],
                       check=True, cwd=ROOT)
    return out


@pytest.mark.parametrize("name", sorted(EXPECTATIONS))
def test_scenario_recorded_on_gpu(recordings: Path, name: str) -> None:
    EXPECTATIONS[name](assemble_file(recordings / f"{name}.spool.jsonl.gz"),
                       load_note(recordings, name))


@pytest.mark.parametrize("name", sorted(RANK_EXPECTATIONS))
def test_multi_gpu_scenario_recorded(recordings: Path, name: str) -> None:
    import torch

    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    traces = {rank: assemble_file(path) for rank, path in spools(recordings)[name].items()}
    RANK_EXPECTATIONS[name](traces, load_note(recordings, name))


@pytest.mark.parametrize("name", sorted(CHILD_EXPECTATIONS))
def test_scenario_with_a_child_recorded_on_gpu(recordings: Path, name: str) -> None:
    CHILD_EXPECTATIONS[name](assemble_file(recordings / f"{name}.spool.jsonl.gz"),
                             child_traces_for(name, recordings), load_note(recordings, name))
