"""``graphdoctor compare`` and ``graphdoctor run --baseline`` on a real GPU: the graphs-off
run times the compiled function and the graphed callables eagerly, and the run as written
gets a measured speedup from it.

    pytest tests/gpu/test_compare_gpu.py --require-gpu
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from graphdoctor.diagnose.measure import BASELINE_RUN
from graphdoctor.report.io import load
from tests.conftest import ROOT

pytestmark = pytest.mark.gpu
SCRIPTS = ROOT / "fixtures" / "scripts"
COMPILED = "compiled Sequential.forward (compile_healthy.py:11)"
MEASURED = ("faster", "neutral", "slower")


def graphdoctor(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "graphdoctor", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    return done


def compare_json(script: str, tmp_path: Path) -> dict[str, Any]:
    done = graphdoctor("compare", "-q", "-f", "json", "--repeats", "2", "--timeout", "300",
                       str(SCRIPTS / script), cwd=tmp_path)
    return json.loads(done.stdout[done.stdout.index("{\n"):])  # type: ignore[no-any-return]


def rows(data: dict[str, Any], variant: str) -> list[dict[str, Any]]:
    return [row for row in data["rows"] if row["variant"] == variant]


def test_compare_measures_a_reduce_overhead_compile(tmp_path: Path) -> None:
    data = compare_json("compile_healthy.py", tmp_path)
    off = next(r for r in rows(data, "graphs-off") if r["subject"] == COMPILED)
    assert off["calls"] == "eager" and off["samples"] >= 2 * 290  # 300 calls a run
    assert off["gpu_us"]["p50"] > 0 and off["verdict"]["kind"] == "graphs-off"
    written = next(r for r in rows(data, "as-written") if r["subject"] == COMPILED)
    assert written["calls"] == "replay" and written["verdict"]["speedup"] is not None
    assert set(written["verdict"]["kinds"]) <= set(MEASURED)
    assert "eager from the --baseline run" in written["verdict"]["summary"]


def test_compare_measures_make_graphed_callables(tmp_path: Path) -> None:
    data = compare_json("healthy_make_graphed_callables.py", tmp_path)
    graphed = [r for r in rows(data, "graphs-off") if r["subject"].startswith("graphed ")]
    assert graphed and graphed[0]["calls"] == "eager" and graphed[0]["samples"] >= 2 * 50
    assert graphed[0]["gpu_us"]["p50"] > 0
    graphs = [r for r in rows(data, "as-written") if r["subject"].startswith("graph (")]
    measured = [r for r in graphs if r["verdict"] and r["verdict"]["speedup"] is not None]
    assert measured, [r["verdict"] for r in graphs]  # the forward pass's graph at least


def test_run_baseline_measures_a_compiled_function(tmp_path: Path) -> None:
    graphdoctor("run", "-q", "--baseline", "-o", "r.json", str(SCRIPTS / "compile_healthy.py"),
                cwd=tmp_path)
    report = load(tmp_path / "r.json")
    verdict = next(v for v in report.diagnosis.verdicts if v.subject == COMPILED)
    assert verdict.kind in MEASURED and verdict.speedup is not None, verdict.summary
    assert verdict.measurements["eager_source"] == BASELINE_RUN
    assert report.baseline is not None and report.baseline.complete
    assert any("(mode='reduce-overhead')" in what for what in report.baseline.switched_off)


def test_run_baseline_measures_make_graphed_callables(tmp_path: Path) -> None:
    graphdoctor("run", "-q", "--baseline", "-o", "r.json",
                str(SCRIPTS / "healthy_make_graphed_callables.py"), cwd=tmp_path)
    report = load(tmp_path / "r.json")
    measured = [v for v in report.diagnosis.verdicts if v.speedup is not None]
    assert measured, [v.summary for v in report.diagnosis.verdicts]
    assert measured[0].measurements["eager_source"] == BASELINE_RUN
    assert report.baseline is not None
    assert any(what.startswith("make_graphed_callables at ")
               for what in report.baseline.switched_off)


def test_run_baseline_keeps_a_raw_capture_and_says_what_to_add(tmp_path: Path) -> None:
    graphdoctor("run", "-q", "--baseline", "-o", "r.json", str(SCRIPTS / "sync_between_replays.py"),
                cwd=tmp_path)
    report = load(tmp_path / "r.json")
    assert report.baseline is not None
    assert any(what.startswith("torch.cuda.graph at ") for what in report.baseline.kept_as_written)
    verdict = report.diagnosis.verdicts[0]
    if verdict.speedup is None:  # unless the recorder timed the script's own eager step
        assert "`for _ in range(" in verdict.summary and "step(static_x)" in verdict.summary
