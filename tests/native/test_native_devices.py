"""A native program's report names the GPU it ran on: the recording child reads NVML (the
program inherits the child's CUDA_VISIBLE_DEVICES, so the devices NVML shows it are the
program's) and the machine's facts, as the Python recorder does once torch is imported.
Here with a stand-in for pynvml, and a program that never starts CUDA."""

from __future__ import annotations

import shutil
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from graphdoctor.diagnose import diagnose
from graphdoctor.launch.runner import Target
from graphdoctor.record.native.run import LIBRARY_ENV, run_native
from graphdoctor.record.recorder import new_recorder
from graphdoctor.report.document import build
from graphdoctor.report.render.markdown import render_markdown
from graphdoctor.report.render.text import render_text
from graphdoctor.trace.assemble import assemble_file
from graphdoctor.trace.spool import records as sr
from graphdoctor.trace.spool.file import SpoolWriter

TRUE = shutil.which("true") or "/bin/true"


class FakeNvml(types.ModuleType):
    """Mimics the part of ``pynvml`` the recorder reads: one H200 at NVML index 1."""

    NVML_CLOCK_SM = 1

    def __init__(self) -> None:
        super().__init__("pynvml")
        self.shut_down = False

    def nvmlInit(self) -> None: ...
    def nvmlShutdown(self) -> None:
        self.shut_down = True

    def nvmlDeviceGetCount(self) -> int:
        return 2

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        return index

    def nvmlDeviceGetName(self, handle: int) -> bytes:
        return b"NVIDIA H200" if handle == 1 else b"NVIDIA H100 80GB HBM3"

    def nvmlDeviceGetMemoryInfo(self, handle: int) -> Any:
        return types.SimpleNamespace(total=150_754_820_096, used=1 << 30)

    def nvmlDeviceGetCudaComputeCapability(self, handle: int) -> tuple[int, int]:
        return 9, 0

    def nvmlSystemGetDriverVersion(self) -> str:
        return "580.159.04"

    def nvmlDeviceGetUtilizationRates(self, handle: int) -> Any:
        return types.SimpleNamespace(gpu=97, memory=40)

    def nvmlDeviceGetClockInfo(self, handle: int, clock: int) -> int:
        return 1980


def test_a_native_programs_report_names_its_gpu(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    nvml = FakeNvml()
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")  # the program sees NVML's device 1
    monkeypatch.setenv(LIBRARY_ENV, "")
    spool = SpoolWriter(tmp_path / "native.spool.jsonl")
    spool.write(sr.Hello({"version": 1, "tool_version": "test", "pid": 1, "argv": [],
                          "target": TRUE, "target_kind": "path", "cwd": str(tmp_path),
                          "mode": "default", "started_at": ""}))
    recorder = new_recorder(spool, "default")
    outcome = run_native(Target(TRUE, ()), recorder)
    spool.write(sr.End({"exit_code": outcome.exit_code, "interrupted": False}))
    spool.close()
    trace = assemble_file(tmp_path / "native.spool.jsonl")
    assert outcome.exit_code == 0 and nvml.shut_down
    assert [(d.index, d.name, d.compute_capability, d.driver) for d in trace.meta.devices] == \
        [(0, "NVIDIA H200", "9.0", "580.159.04")]
    assert trace.meta.hostname and not trace.meta.python  # the program is not Python
    report = build(trace, diagnose(trace))
    text, markdown = render_text(report, width=100, color=False), render_markdown(report)
    assert "NVIDIA H200" in text and "no GPU recorded" not in text
    assert "on NVIDIA H200" in markdown
