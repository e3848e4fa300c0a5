"""NVTX ranges for each phase, so Nsight Systems shows captures, replays and timed calls.

Uses the ``nvtx`` package's domain API (cheap when no tool is attached); a no-op without it.
One ``NvtxRanges`` per recording, on ``recorder.nvtx``. Imports no torch.

A tool listens where NVTX is told to load one (``NVTX_INJECTION64_PATH``, which Nsight
Systems and Nsight Compute set): only then do the replays outside the timed sample get a
range too (:mod:`graphdoctor.record.capture.replay_path`), as the calls cost a tight loop of tiny
replays a tenth of its time even when nothing listens.
"""

from __future__ import annotations

import os
from typing import Any

LISTENING_ENV = ("NVTX_INJECTION64_PATH", "NVTX_INJECTION32_PATH")

_COLORS = {"capture": "red", "replay": "green", "eager": "blue", "warmup": "yellow"}


class NvtxRanges:
    """graphdoctor's NVTX domain while enabled; every call a no-op otherwise."""

    def __init__(self) -> None:
        self._domain: Any = None  # nvtx.Domain: the nvtx package ships no types
        self._replay_attrs: dict[int, Any] = {}  # graph id -> its replay range's attributes
        self.listened = False  # enabled, and a tool listens

    def enable(self) -> bool:
        try:
            import nvtx  # type: ignore[import-untyped] # the package ships no types
        except ImportError:
            return False
        self._domain = nvtx.get_domain("graphdoctor")
        self.listened = any(os.environ.get(name) for name in LISTENING_ENV)
        return True

    def disable(self) -> None:
        self._domain = None
        self.listened = False

    def push(self, message: str, phase: str) -> None:
        domain = self._domain
        if domain is not None:
            domain.push_range(domain.get_event_attributes(message=message, color=_COLORS[phase]))

    def push_replay(self, graph: int) -> None:
        domain = self._domain
        if domain is None:
            return
        attrs = self._replay_attrs.get(graph)
        if attrs is None:
            attrs = domain.get_event_attributes(message=f"replay graph {graph}", color="green")
            self._replay_attrs[graph] = attrs
        domain.push_range(attrs)

    def pop(self) -> None:
        domain = self._domain
        if domain is not None:
            domain.pop_range()
