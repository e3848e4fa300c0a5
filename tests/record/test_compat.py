"""Private torch APIs reached through record/compat.py, checked against the installed torch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]

# What torch's frame symbolizer does (torch/csrc/profiler/python/combined_traceback.cpp):
# hasattr(torch, "_inductor"), then hasattr(inductor, "codecache").
SYMBOLIZER_PROBE = """
import sys, torch
from graphdoctor.record.compat import _inductor_left_unimported
assert "torch._inductor" not in sys.modules
with _inductor_left_unimported():
    asked = hasattr(torch, "_inductor") and not hasattr(torch._inductor, "codecache")
print(asked, "torch._inductor" in sys.modules, "_inductor" in vars(torch))
import torch._inductor.codecache
print(hasattr(torch._inductor, "codecache"))
"""


def test_a_snapshot_leaves_inductor_unimported_and_torch_as_it_was() -> None:
    done = subprocess.run([sys.executable, "-c", SYMBOLIZER_PROBE], capture_output=True,
                          text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["True", "False", "False", "True"]
