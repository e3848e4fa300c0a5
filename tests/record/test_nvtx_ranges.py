"""NVTX ranges through the nvtx package's domain API: no-ops until enabled (and after), real
ranges while enabled. On a CPU machine no tool listens, so this checks the calls themselves."""

from __future__ import annotations

import pytest

from graphdoctor.record.device.nvtx_ranges import NvtxRanges


def test_every_call_is_a_no_op_until_enabled() -> None:
    ranges = NvtxRanges()
    ranges.push("capture graph 0", "capture")
    ranges.push_replay(0)
    ranges.pop()


def test_ranges_nest_while_enabled_and_stop_once_disabled() -> None:
    pytest.importorskip("nvtx")
    ranges = NvtxRanges()
    assert ranges.enable()
    ranges.push("capture graph 0", "capture")
    ranges.pop()
    for _ in range(2):  # the second replay reuses the first one's attributes
        ranges.push_replay(0)
        ranges.pop()
    ranges.disable()
    ranges.pop()  # disabled: nothing to pop, and nothing raised


def test_a_tool_listens_only_where_nvtx_is_told_to_load_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("nvtx")
    for name in ("NVTX_INJECTION64_PATH", "NVTX_INJECTION32_PATH"):
        monkeypatch.delenv(name, raising=False)
    ranges = NvtxRanges()
    assert ranges.enable() and not ranges.listened
    monkeypatch.setenv("NVTX_INJECTION64_PATH", "/opt/nsight-systems/libToolsInjection64.so")
    assert ranges.enable() and ranges.listened
    ranges.disable()
    assert not ranges.listened
