"""Which functions a capture ran, and how long they take when run eagerly.

During a capture a profile hook notes the user functions the capturing frame calls (the
top-level ones: ``step`` in ``with torch.cuda.graph(g): out = step(x)``, or ``Model.forward``
behind ``model(x)``). Afterwards, on Python 3.12+, ``sys.monitoring`` watches just those code
objects, so every eager call of them is timed (host and GPU) at no cost to any other code.
These eager times are the baseline a replay is compared with; without them graphdoctor
says it has no baseline rather than guessing one.
"""

from __future__ import annotations

import sys
from types import CodeType, FrameType
from typing import Any

from graphdoctor.record.recorder import Recorder
from graphdoctor.trace.model import TORCH

_TOOL_NAME = "graphdoctor"


class CalleeFinder:
    """A profile hook, live only during one capture, that collects top-level user callees."""

    def __init__(self, recorder: Recorder, capture_frame: FrameType | None):
        self._recorder = recorder
        self._capture_frame = capture_frame
        self.codes: list[CodeType] = []

    def start(self) -> bool:
        if self._capture_frame is None or sys.getprofile() is not None:
            return False  # another profiler owns the hook; leave it alone
        sys.setprofile(self._on_event)
        return True

    def stop(self) -> list[CodeType]:
        if sys.getprofile() == self._on_event:
            sys.setprofile(None)
        return self.codes

    def _on_event(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or frame.f_code.co_name == "<module>":
            return
        stacks = self._recorder.stacks
        if not stacks.is_user_code(frame.f_code):
            return
        parent = frame.f_back
        # only torch's own frames (Module.__call__) may stand between the capturing frame
        # and a callee; an import or a stdlib helper in between means it is not the step
        while parent is not None and stacks.kind(parent.f_code.co_filename) == TORCH:
            parent = parent.f_back
        if parent is self._capture_frame and frame.f_code not in self.codes:
            self.codes.append(frame.f_code)


def innermost_user_frame(recorder: Recorder, frame: FrameType | None) -> FrameType | None:
    while frame is not None and not recorder.stacks.is_user_code(frame.f_code):
        frame = frame.f_back
    return frame


class EagerCallTimer:
    """Times every call of chosen code objects through ``sys.monitoring`` (3.12+)."""

    def __init__(self, recorder: Recorder):
        self._recorder = recorder
        self._watched: dict[CodeType, tuple[int, int]] = {}  # code -> (function id, graph)
        self._open: dict[int, list[tuple[int, str, Any]]] = {}  # function id -> open calls
        self._tool: int | None = None

    @property
    def available(self) -> bool:
        return hasattr(sys, "monitoring")

    def watch(self, code: CodeType, fn: int, graph: int) -> bool:
        if not self._recorder.config.eager_calls:
            return False
        if not self.available or code in self._watched:
            return code in self._watched
        if self._tool is None and not self._claim_tool():
            return False
        self._watched[code] = (fn, graph)
        events = sys.monitoring.events
        sys.monitoring.set_local_events(self._tool, code, events.PY_START | events.PY_RETURN)
        return True

    def _claim_tool(self) -> bool:
        mon = sys.monitoring
        for tool in (5, 4, 3):
            if mon.get_tool(tool) is None:
                mon.use_tool_id(tool, _TOOL_NAME)
                mon.register_callback(tool, mon.events.PY_START, self._on_start)
                mon.register_callback(tool, mon.events.PY_RETURN, self._on_return)
                self._tool = tool
                return True
        return False

    def _on_start(self, code: CodeType, offset: int) -> None:
        watched = self._watched.get(code)
        if watched is None or self._recorder.capturing_anywhere or not self._recorder.enabled:
            return
        timer = self._recorder.timer
        token = timer.start() if timer is not None else None
        mode = "warmup" if self._recorder.in_warmup else "eager"
        self._open.setdefault(watched[0], []).append((self._recorder.now(), mode, token))

    def _on_return(self, code: CodeType, offset: int, retval: Any) -> None:
        watched = self._watched.get(code)
        calls = self._open.get(watched[0]) if watched is not None else None
        if not calls:
            return
        t0, mode, token = calls.pop()
        fn, graph = watched  # type: ignore[misc]
        dur = self._recorder.now() - t0
        row = ["call", t0, dur, -1, fn, mode, -1]
        if token is None:
            self._recorder.emit(row)
        else:
            self._recorder.timer.stop(token, row)

    def close(self) -> None:
        if self._tool is None:
            return
        for code in self._watched:
            sys.monitoring.set_local_events(self._tool, code, 0)
        for event in (sys.monitoring.events.PY_START, sys.monitoring.events.PY_RETURN):
            sys.monitoring.register_callback(self._tool, event, None)
        sys.monitoring.free_tool_id(self._tool)
        self._tool = None
