"""Stepping aside for torch's profiler: once torch is imported, the CUPTI layer hands CUPTI
over before one of its profilers starts (the script's, or ``--full``'s own), since kineto
takes CUPTI and the activity buffers are process-wide. What was recorded stays; the report
says where the profiler started."""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType
from typing import Any, Protocol

from graphdoctor.record.cupti.calls import from_torch
from graphdoctor.record.recorder import Recorder, patch
from graphdoctor.trace.names import CUPTI_PART


class SteppingAside(Protocol):
    """The CUPTI layer, as far as a profiler's start concerns it."""

    def step_aside(self, why: str) -> None: ...


def watch_profilers(recorder: Recorder, layer: SteppingAside) -> None:
    """Once torch is imported: step aside when one of its profilers starts (the script's,
    or --full's own), before kineto takes CUPTI."""
    from graphdoctor.record import compat  # imports torch: only once the script has

    found = compat.profiler_starts()
    if found is None:
        recorder.note(CUPTI_PART, "torch's profiler cannot be watched in this torch: a "
                                  "profiler started by the script would find CUPTI taken")
        return
    owner, names = found
    for name in names:
        recorder.add_uninstall(patch(owner, name, lambda original: _stepping_aside(
            original, recorder, layer)))


def _stepping_aside(original: Callable[..., Any], recorder: Recorder,
                    layer: SteppingAside) -> Callable[..., Any]:
    def start(profile: Any, *args: Any, **kwargs: Any) -> Any:
        whose = "graphdoctor's own profiler (--full)" if recorder.profiling_itself else \
            "a profiler the script started"
        layer.step_aside(f"{whose}{_at(sys._getframe(1))}")
        return original(profile, *args, **kwargs)

    return start


def _at(frame: FrameType | None) -> str:
    """`` at file.py:12``: the first frame outside torch, where the profiler was started."""
    while frame is not None and from_torch(frame):
        frame = frame.f_back
    return f" at {frame.f_code.co_filename.rsplit('/', 1)[-1]}:{frame.f_lineno}" if frame else ""
