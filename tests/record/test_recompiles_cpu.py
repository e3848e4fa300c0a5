"""End to end on the CPU: ``graphdoctor run`` records each recompile's failed guard, with
dynamo's recompiles log off or on, and the report names the guard, the line and the cost."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torch")

from graphdoctor.report.io import load  # noqa: E402
from graphdoctor.trace.model import Trace  # noqa: E402
from graphdoctor.trace.names import RECOMPILE  # noqa: E402

pytestmark = pytest.mark.slow  # the second test command (README: Tests)

SCRIPT = textwrap.dedent("""\
    import torch


    class Attention(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.wk = torch.nn.Linear(8, 8)
            self.register_buffer("k_cache", torch.zeros(1, 16, 8))

        def setup_cache(self, length):
            self.k_cache = torch.zeros(1, length, 8)  # a new buffer for each longer request

        def forward(self, x, pos):
            self.k_cache[:, pos] = self.wk(x)
            return self.k_cache.sum(1)


    model = Attention()
    step = torch.compile(model, backend="eager")
    with torch.no_grad():
        for length in (16, 32, 48):
            model.setup_cache(length)
            for pos in range(2):
                step(torch.randn(1, 8), pos)
""")
K_CACHE = "self.k_cache"


NEW_SHAPE = textwrap.dedent("""\
    import torch


    def scale(factor, x):
        return x * factor


    step = torch.compile(scale, backend="eager")
    for size in (4, 8):
        step(2.0, torch.ones(size))
""")


def record(tmp_path: Path, script_text: str = SCRIPT, **env: str) -> tuple[Trace, str, str]:
    script = tmp_path / "realloc.py"
    script.write_text(script_text)
    report = tmp_path / "r.json"
    done = subprocess.run([sys.executable, "-m", "graphdoctor", "run", "-o", str(report),
                           str(script)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **env}, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    shown = subprocess.run([sys.executable, "-m", "graphdoctor", "report", str(report)],
                           capture_output=True, text=True, timeout=120, check=True)
    return load(report).trace, shown.stdout, done.stderr


def recompiles(trace: Trace) -> list[tuple[str, str, bool]]:
    return [(e.compile_id, e.key, e.dur > 0) for e in trace.compile_events
            if e.kind == RECOMPILE]


def test_recompiles_are_recorded_with_the_log_off_and_reported(tmp_path: Path) -> None:
    trace, shown, stderr = record(tmp_path)
    assert recompiles(trace) == [("0/1", "pos", True), ("0/2", K_CACHE, True),
                                 ("0/3", "pos", True), ("0/4", K_CACHE, True),
                                 ("0/5", "pos", True)]
    assert "Recompiling function" not in stderr  # the script's log stays off
    assert (f"forward recompiled 4 times because tensor {K_CACHE} was re-allocated at another "
            "size (size mismatch at index 1: 16 → 32 → 48)") in " ".join(shown.split())
    # the buffer's guard names no line: the compiled function's; pos == 0 names the line
    assert "at realloc.py:13 in forward" in shown and "Allocate self.k_cache once" in shown
    assert "at realloc.py:14 in forward" in shown and "on the guard pos == 0" in shown
    assert "forward: 6 compiles (5 recompiles)" in shown


def test_with_the_recompiles_log_on_each_recompile_is_recorded_once(tmp_path: Path) -> None:
    trace, _, stderr = record(tmp_path, TORCH_LOGS="recompiles")
    assert "Recompiling function forward" in stderr  # the script still sees its log
    assert [key for _, key, _ in recompiles(trace)] == ["pos", K_CACHE, "pos", K_CACHE, "pos"]


def test_each_recompile_records_the_re_allocated_tensor_its_guard_names(tmp_path: Path) -> None:
    trace, _, _ = record(tmp_path)
    seen = [(t.compile_id, t.name, t.shape, t.dtype, t.position) for t in trace.guarded_tensors]
    assert seen == [("0/2", K_CACHE, "1x32x8", "float32", -1),
                    ("0/4", K_CACHE, "1x48x8", "float32", -1)]
    first, second = trace.guarded_tensors
    assert first.size == 32 * 8 * 4 and second.size == 48 * 8 * 4
    assert first.addr and second.addr and first.addr != second.addr


def test_a_recompile_for_an_input_shape_records_the_argument_and_its_position(
        tmp_path: Path) -> None:
    trace, _, _ = record(tmp_path, NEW_SHAPE)
    assert [(t.name, t.position, t.shape) for t in trace.guarded_tensors] == [("x", 1, "8")]
