"""A run with CUDA graphs off (``GRAPHDOCTOR_GRAPHS=off``, set by ``graphdoctor run
--baseline`` and ``graphdoctor compare``): torch.compile without CUDA graphs, timed per call.

Each ``torch.compile`` call whose mode, options or inductor config ask for CUDA graphs
compiles the same way with ``triton.cudagraphs`` off (see
:mod:`graphdoctor.record.compat.graphs_off`); a note in the report says which. What it
returns is timed per call, host and GPU, as eager calls of a compiled function: the first
call, and each call that compiled, as warm-up. The function is named, filed and lined as the
recorder names it when CUDA graphs are on (the code dynamo runs: its own place when it is
the user's or a library's, else the user's line that calls it), so that the run with graphs
can find these calls in this one. A call made while dynamo traces an outer compiled function
is not timed: dynamo folds torch's ``is_compiling`` check and never traces the timing.
"""

from __future__ import annotations

import functools
import sys
from types import FrameType, MethodType
from typing import Any

import torch

from graphdoctor.record import compat
from graphdoctor.record.eager.calls import callee_code, innermost_user_frame
from graphdoctor.record.recorder import Recorder
from graphdoctor.record.stacks import qualname
from graphdoctor.trace.event_kinds import Call
from graphdoctor.trace.names import (
    COMPILED_FUNCTION,
    EAGER_CALL,
    KEPT_AS_WRITTEN,
    SWITCHED_OFF,
    WARMUP_CALL,
)

INDUCTOR = "inductor"
CUDAGRAPHS_BACKEND = "cudagraphs"  # torch's own backend that is nothing but CUDA graphs


class Notes:
    """What a run with graphs off switched off and left as written, each said once."""

    def __init__(self, recorder: Recorder):
        self.rec = recorder
        self._said: set[str] = set()

    def say(self, what: str, why: str) -> None:
        if why not in self._said:
            self._said.add(why)
            self.rec.note(what, why)

    def site(self, caller: FrameType | None) -> str:
        frame = innermost_user_frame(self.rec, caller)
        return f" at {frame.f_code.co_filename}:{frame.f_lineno}" if frame is not None else ""


def compile_kwargs(notes: Notes, kwargs: dict[str, Any], caller: FrameType) -> dict[str, Any]:
    """torch.compile's keyword arguments with CUDA graphs off, noted where they asked for
    them; unchanged for a backend other than inductor, or a mode torch does not know."""
    backend = kwargs.get("backend") or INDUCTOR
    if backend == CUDAGRAPHS_BACKEND:
        notes.say(KEPT_AS_WRITTEN, f"torch.compile{notes.site(caller)} with backend="
                  "'cudagraphs' ran as written: graphdoctor switches CUDA graphs off for the "
                  "inductor backend only")
    if backend != INDUCTOR:
        return kwargs
    mode = kwargs.get("mode")
    spelled = compat.mode_options(mode, kwargs.get("dynamic")) if mode else {}
    if spelled is None:
        return kwargs
    options = {**spelled, **(kwargs.get("options") or {})}
    if options.get(compat.CUDAGRAPHS_OPTION) or compat.cudagraphs_by_default():
        notes.say(SWITCHED_OFF, f"torch.compile{_asked(mode, kwargs)}{notes.site(caller)}: "
                  f"compiled with the same options and {compat.CUDAGRAPHS_OPTION}=False")
    rest = {k: v for k, v in kwargs.items() if k != "mode"}
    return {**rest, "options": {**options, compat.CUDAGRAPHS_OPTION: False}}


def _asked(mode: str | None, kwargs: dict[str, Any]) -> str:
    return f" (mode={mode!r})" if mode else " (options)" if kwargs.get("options") else ""


def note_raw_capture(notes: Notes, api: str, caller: FrameType) -> None:
    notes.say(KEPT_AS_WRITTEN, f"{api}{notes.site(caller)} captured as written: a raw "
              "capture has no graph-free form graphdoctor could run instead")


def note_graphed_callables(notes: Notes, caller: FrameType) -> None:
    notes.say(SWITCHED_OFF, f"make_graphed_callables{notes.site(caller)}: returned its "
              "callables unchanged, run eagerly")


class CompileCount:
    """How many compilations have started (dynamo's compile callbacks count them), so that a
    call during which one started is known to have compiled."""

    def __init__(self) -> None:
        self.started = 0


def timed(recorder: Recorder, compiled: Any, target: Any, count: CompileCount) -> Any:
    """``compiled`` (what torch.compile returned for ``target``), each call timed; a module
    stays itself, its ``forward`` timed."""
    if isinstance(compiled, torch.nn.Module):
        compiled.forward = _Timed(recorder, compiled.forward, target, count).wrapper()
        return compiled
    return _Timed(recorder, compiled, target, count).wrapper()


class _Timed:
    def __init__(self, recorder: Recorder, call: Any, target: Any, count: CompileCount):
        self.rec = recorder
        self.call = call
        self.target = target
        self.count = count
        self.fn = -1  # the function's id, known at its first call (its caller names it)
        self.is_compiling = compat.is_compiling_check()

    def wrapper(self) -> Any:
        call, is_compiling = self.call, self.is_compiling

        @functools.wraps(call)
        def timed_call(*args: Any, **kwargs: Any) -> Any:
            if is_compiling() or not self.rec.enabled:
                return call(*args, **kwargs)
            return self.run(sys._getframe(1), args, kwargs)

        return timed_call

    def run(self, caller: FrameType, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        first = self.fn < 0
        if first:
            self.fn = self._function(caller)
        compiles = self.count.started
        timer = self.rec.timer
        token = timer.start() if timer is not None else None
        t0 = self.rec.now()
        try:
            return self.call(*args, **kwargs)
        finally:
            mode = WARMUP_CALL if first or self.count.started != compiles else EAGER_CALL
            row = Call(t0, self.rec.now() - t0, -1, self.fn, mode, -1)
            if token is None or timer is None:
                self.rec.emit(row)
            else:
                timer.stop(token, row)

    def _function(self, caller: FrameType) -> int:
        name, file, line = identity(self.rec, self.target, caller)
        return self.rec.function_id(("compiled", name, file, line), name, COMPILED_FUNCTION,
                                    file, line)


def identity(recorder: Recorder, target: Any, caller: FrameType | None) -> tuple[str, str, int]:
    """(name, file, line) of a compiled function as the recorder names it with graphs on:
    the code dynamo runs (a module's ``forward``), at its own place when that is the user's
    or a library's code, else at the user's line that calls it."""
    code = callee_code(_module_behind(target))
    if code is None:
        return (getattr(target, "__qualname__", type(target).__qualname__), "", 0)
    name = qualname(code)
    if recorder.stacks.is_user_code(code):
        return (name, code.co_filename, code.co_firstlineno)
    frame = innermost_user_frame(recorder, caller)
    if frame is None:
        return (name, code.co_filename, code.co_firstlineno)
    return (name, frame.f_code.co_filename, frame.f_lineno)


def _module_behind(target: Any) -> Any:
    """``module._call_impl`` (what ``Module.compile`` compiles) stands for the module."""
    owner = getattr(target, "__self__", None) if isinstance(target, MethodType) else None
    if isinstance(owner, torch.nn.Module) and target.__name__ in compat.MODULE_CALLS:
        return owner
    return compat.compiled_module(target)
