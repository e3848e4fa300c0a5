"""Whether a run had CUDA, when the child died before it could read the CUDA state: the
report says what the spool shows, never that no CUDA device was found."""

from __future__ import annotations

from typing import Any

from graphdoctor.diagnose import diagnose
from graphdoctor.report.document import build
from graphdoctor.report.render.summary import outcome_lines
from graphdoctor.trace.assemble import assemble
from graphdoctor.trace.model import Trace
from graphdoctor.trace.names import CUDA_STATE_UNREAD

HELLO = ["hello", {"version": 1, "target": "t.py", "mode": "default"}]
GPU_META = ["meta", {"torch": "2.13.0+cu130", "cuda": "13.0"}]
CPU_META = ["meta", {"torch": "2.13.0+cpu", "cuda": ""}]
H100 = ["devices", [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "memory_total": 85520809984,
                     "compute_capability": "9.0", "driver": "580.1"}]]
AT_INIT = ["cuda_state", {"built": True, "available": True, "device_count": 1,
                          "initialized": True, "when": "init"}]
SEGV = ["run_end", {"exit_code": 139, "reason": "signal", "signal": 11, "wall_ns": 1}]
EXITED = ["run_end", {"exit_code": 0, "reason": "exited", "signal": None, "wall_ns": 1}]


def cuda_lines(trace: Trace) -> list[str]:
    lines = outcome_lines(build(trace, diagnose(trace)))
    return [line for line in lines if "CUDA" in line]


def unread(trace: Trace) -> list[str]:
    return [n.why for n in trace.meta.not_recorded if n.what == CUDA_STATE_UNREAD]


def test_a_crash_after_cuda_init_names_the_device() -> None:
    trace = assemble([HELLO, GPU_META, H100, AT_INIT, ["nvml", 5, 0, 90, 40, 1 << 30, 1980],
                      SEGV])
    assert trace.meta.cuda_available
    (why,) = unread(trace)
    assert why.startswith("the run ended before graphdoctor could read it")
    assert "the script had initialized CUDA" in why
    assert "device 0 was NVIDIA H100 80GB HBM3 (80 GiB)" in why
    (line,) = cuda_lines(trace)
    assert "could read" in line and "no CUDA device" not in line


def test_a_crash_with_only_nvml_devices_still_names_them() -> None:
    many = ["devices", [{"index": i, "name": "NVIDIA H200"} for i in range(3)]]
    trace = assemble([HELLO, GPU_META, many, SEGV])
    assert trace.meta.cuda_available
    assert "devices 0, 1, 2 were NVIDIA H200" in unread(trace)[0]


def test_a_crash_after_graphs_counts_what_was_recorded() -> None:
    trace = assemble([HELLO, GPU_META,
                      ["graph", {"id": 0, "t": 100, "api": "torch.cuda.graph", "stream": 7}],
                      ["replay", 300, 10, 5, 0, 7, 0], SEGV])
    assert trace.meta.cuda_available
    assert "it recorded 1 CUDA graph and 1 graph replay" in unread(trace)[0]


def test_a_crash_with_no_sign_of_cuda_does_not_claim_there_was_none() -> None:
    trace = assemble([HELLO, GPU_META, SEGV])
    assert not trace.meta.cuda_available
    assert "nothing recorded before then shows that CUDA was used" in unread(trace)[0]
    assert not any("no CUDA device" in line for line in cuda_lines(trace))


def end_state(available: bool, when: str | None = "end") -> list[Any]:
    info = {"built": True, "available": available, "device_count": int(available),
            "initialized": available}
    return ["cuda_state", info if when is None else {**info, "when": when}]


def test_the_state_read_at_the_end_is_the_final_word() -> None:
    trace = assemble([HELLO, GPU_META, H100, AT_INIT, end_state(False), ["end", {}], EXITED])
    assert not trace.meta.cuda_available and not unread(trace)
    assert cuda_lines(trace) == [
        "graphdoctor: no CUDA device was found; only compile events were recorded"]


def test_an_older_spools_end_state_is_read_as_final() -> None:
    trace = assemble([HELLO, GPU_META, end_state(True, when=None), ["end", {}], EXITED])
    assert trace.meta.cuda_available and not unread(trace) and not cuda_lines(trace)


def test_a_crash_on_a_torch_without_cuda_says_there_was_none() -> None:
    trace = assemble([HELLO, CPU_META, ["note", "CUDA", "this torch build has no CUDA support"],
                      SEGV])
    assert not trace.meta.cuda_available and not unread(trace)
    assert cuda_lines(trace) == [
        "graphdoctor: no CUDA device was found; only compile events were recorded"]


def test_nvml_devices_beside_a_torch_without_cuda_are_not_cuda() -> None:
    trace = assemble([HELLO, CPU_META, H100, SEGV])
    assert not trace.meta.cuda_available and not unread(trace)
