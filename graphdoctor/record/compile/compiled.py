"""torch.compile: graph breaks, recompiles, cudagraph skips and re-recordings, and the calls
of each compiled function under CUDAGraph Trees.

Nothing of torch._dynamo or torch._inductor is imported until the script first calls
``torch.compile`` (importing them costs seconds). Then: handlers on the artifact loggers
where PyTorch reports these events (their records are kept raw and parsed later, so a new
PyTorch wording needs a new parser, not a new recording); the guards that failed on each
recompile, which dynamo gives its own recompiles log only when that log is on; dynamo's
compile callbacks; and a wrapper on ``CUDAGraphTreeManager.run`` that times each call (on the
host each one, on the GPU a sample: :mod:`.gpu_sample`) and says whether it warmed up,
recorded a graph, replayed one or ran eagerly. In a run with CUDA
graphs off, each compile runs without them and what it returns is timed per call instead
(:mod:`.graphs_off`).
"""

from __future__ import annotations

import functools
import logging
import sys
import threading
import time
import weakref
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

import torch

from graphdoctor.facts.queries import CULPRIT_KINDS
from graphdoctor.record import compat
from graphdoctor.record.compile import failed_calls, graphs_off, guarded
from graphdoctor.record.compile.call_lane import CallLane, reset
from graphdoctor.record.device.gpu_sample import GpuSample, sampled_note
from graphdoctor.record.recorder import CompiledCall, Recorder, TimerToken, Uninstall, patch
from graphdoctor.record.stacks import qualname
from graphdoctor.trace.event_kinds import Call
from graphdoctor.trace.model import LIBRARY, TORCH, USER
from graphdoctor.trace.names import (
    COMPILE_END,
    COMPILE_START,
    COMPILED_FUNCTION,
    EAGER_CALL,
    RECORDING_CALL,
    REPLAYING_CALL,
    WARMUP_CALL,
)
from graphdoctor.trace.spool import records as sr

_LOGGING_FILE = logging.__file__
MAX_REASONS, MAX_REASON = 64, 4000  # a recompile's reasons kept (one per earlier compile)
MAX_FORCED = 256  # records a tap has torch write from one line, where its level would not
KNOWN_ATTR = "_graphdoctor_functions"  # a tree manager's function id -> (function, compile id)
_NONE_KNOWN: dict[Any, tuple[int, str]] = {}  # read only: a manager with no call seen yet


@dataclass
class _CompileHooks:
    """The hooks on dynamo and inductor: installed at the first ``torch.compile`` (or at once,
    if the script imported dynamo first), undone with this source."""

    lane: CallLane  # the calls' fast lane
    installed: bool = False
    undos: list[Uninstall] = field(default_factory=list)
    compiles: graphs_off.CompileCount = field(default_factory=graphs_off.CompileCount)
    # the modules the script compiled, whose parameters and buffers name a moved input
    modules: weakref.WeakSet[torch.nn.Module] = field(default_factory=weakref.WeakSet)
    # which compiled-function calls have their GPU time taken (host time is taken for all)
    sample: GpuSample = field(default_factory=GpuSample)


def install(recorder: Recorder) -> Uninstall:
    hooks = _CompileHooks(CallLane(recorder))
    recorder.heartbeats.append(hooks.lane.heartbeat)
    undo_compile = patch(torch, "compile", functools.partial(_wrap_compile, recorder, hooks))
    if "torch._dynamo" in sys.modules:
        _install_compile_hooks(recorder, hooks)

    def uninstall() -> None:
        recorder.heartbeats.remove(hooks.lane.heartbeat)
        hooks.lane.finish()
        if hooks.installed:
            recorder.emit(sr.Counters(compat.dynamo_counters()))
        if hooks.sample.skipped:
            recorder.note("compiled-function call GPU times",
                          sampled_note("compiled-function calls"))
        undo_compile()
        for undo in reversed(hooks.undos):
            undo()
        hooks.undos.clear()
        hooks.installed = False

    return uninstall


def _wrap_compile(recorder: Recorder, hooks: _CompileHooks, original: Any) -> Any:
    notes = graphs_off.Notes(recorder)

    @functools.wraps(original)
    def compile(*args: Any, **kwargs: Any) -> Any:
        if not hooks.installed:
            _install_compile_hooks(recorder, hooks)
        _remember_module(hooks, args[0] if args else kwargs.get("model"))
        if not recorder.config.graphs_off:
            return original(*args, **kwargs)
        kwargs = graphs_off.compile_kwargs(notes, kwargs, sys._getframe(1))
        compiled = original(*args, **kwargs)
        target = args[0] if args else kwargs.get("model")
        # without a target, torch.compile returns a decorator that calls it again with one
        return compiled if target is None else graphs_off.timed(recorder, compiled, target,
                                                                hooks.compiles)

    return compile


def _remember_module(hooks: _CompileHooks, target: Any) -> None:
    """A module compiled itself, or through its bound method (``torch.compile(m.forward)``)."""
    module = target if isinstance(target, torch.nn.Module) else getattr(target, "__self__", None)
    if isinstance(module, torch.nn.Module):
        hooks.modules.add(module)


def _install_compile_hooks(recorder: Recorder, hooks: _CompileHooks) -> None:
    hooks.installed = True
    undos = hooks.undos
    undos.extend(_LogTap(recorder, name, hooks.modules).attach()
                 for name in compat.logger_names())
    remove_callbacks = compat.register_compile_callbacks(
        functools.partial(_on_compile, recorder, hooks.compiles, COMPILE_START),
        functools.partial(_on_compile, recorder, hooks.compiles, COMPILE_END),
    )
    if remove_callbacks is None:
        recorder.note("compile spans", "torch._dynamo.callback is missing")
    else:
        undos.append(remove_callbacks)
    owner = compat.recompile_reasons_owner()
    if owner is None:
        recorder.note("recompile reasons", "torch._dynamo.convert_frame asks for none")
    else:
        seen = functools.partial(_on_recompile, recorder)
        undos.append(patch(*owner, lambda original: compat.wrap_recompile_reasons(original,
                                                                                  seen)))
    manager = compat.tree_manager_class()
    if manager is None:
        recorder.note("compiled-function calls", "CUDAGraphTreeManager.run is missing")
    else:
        undos.append(patch(manager, "run", functools.partial(_wrap_tree_run, recorder, hooks)))


def _on_compile(recorder: Recorder, compiles: graphs_off.CompileCount, kind: str,
                *args: Any) -> None:
    if kind == COMPILE_START:
        compiles.started += 1
    trigger, compile_id = compat.callback_args(args)
    stack = recorder.stacks.capture(1) if kind == COMPILE_START else -1
    recorder.emit(sr.CompileCallback(recorder.now(), kind, trigger, compile_id, stack))


def _on_recompile(recorder: Recorder, reasons: list[str], frame: Any) -> None:
    """Torch's reasons for compiling ``frame``'s code again, with the stack of the call that
    did it, and the tensors they name: recorded whether or not the script turned dynamo's
    recompiles log on."""
    if recorder.enabled:
        code = getattr(frame, "f_code", None)
        recorder.emit(sr.GuardFailures(
            recorder.now(), compat.current_compile_id(), str(getattr(code, "co_name", "")),
            str(getattr(code, "co_filename", "")), int(getattr(code, "co_firstlineno", 0)),
            [reason[:MAX_REASON] for reason in reasons[:MAX_REASONS]],
            recorder.stacks.capture(1)))
        guarded.record_tensors(recorder, reasons, frame)


class _LogTap:
    """Receives one torch logger's records, the DEBUG ones it needs included, without
    changing what the script sees of it: its level, handlers, filters and ``propagate`` stay
    as the script (or torch) set them, and its handlers get just the records they would have
    got. Two methods are shadowed on this logger alone: ``isEnabledFor``, which answers yes
    to torch's code, so that it logs at every level (within :class:`_ForcedRecords`'
    bounds), and the logger's own answer to anyone else; and ``callHandlers``, which records
    each record and hands on those the logger's own level lets through."""

    def __init__(self, recorder: Recorder, name: str,
                 modules: weakref.WeakSet[torch.nn.Module]):
        self.rec = recorder
        self.log = compat.logger(name)
        self._forced = _ForcedRecords()
        self._modules = modules

    def attach(self) -> Uninstall:
        log = self.log
        # instance attributes shadow Logger's methods; mypy forbids assigning a method
        log.isEnabledFor = self._enabled_for  # type: ignore[method-assign]
        log.callHandlers = self._call_handlers  # type: ignore[method-assign]

        def detach() -> None:
            log.__dict__.pop("isEnabledFor", None)
            log.__dict__.pop("callHandlers", None)

        return detach

    def _enabled_for(self, level: int) -> bool:
        caller: FrameType | None = sys._getframe(1)
        while caller is not None and caller.f_code.co_filename == _LOGGING_FILE:
            caller = caller.f_back  # Logger.debug() and the like ask on their caller's behalf
        enabled = logging.Logger.isEnabledFor(self.log, level)
        if enabled or caller is None or self.rec.stacks.kind(caller.f_code.co_filename) != TORCH:
            return enabled
        return self._forced.allows(caller)

    def _call_handlers(self, record: logging.LogRecord) -> None:
        if self.rec.enabled:
            try:
                message = record.getMessage()
            except Exception:  # noqa: BLE001 - a bad format string is not ours to raise
                message = str(record.msg)
            self.rec.emit(sr.LogRecord(self.rec.now(), self.log.name, record.levelname,
                           message[:20000], compat.current_compile_id(),
                           self.rec.stacks.capture(1)))
            guarded.record_moved(self.rec, message, self._modules)
        if logging.Logger.isEnabledFor(self.log, record.levelno):
            logging.Logger.callHandlers(self.log, record)


class _ForcedRecords:
    """The records a tap has torch write that its logger's level would not let through: one
    per state at a site that logs the same state on every call (``compat.repeat_key``), and
    at most MAX_FORCED from any other line of torch's, so that a debug line in a hot path
    costs the run a bounded amount."""

    def __init__(self) -> None:
        self._per_line: dict[tuple[int, int], int] = {}
        self._states: set[tuple[int, int, int]] = set()

    def allows(self, caller: FrameType) -> bool:
        code = caller.f_code
        key = compat.repeat_key(code)
        local = caller.f_locals if key is not None else {}
        if key is not None and key in local:
            # per line too: torch asks once itself, then again inside log.debug()
            state = (id(code), caller.f_lineno, id(local[key]))
            fresh = state not in self._states
            self._states.add(state)
            return fresh
        line = (id(code), caller.f_lineno)
        count = self._per_line.get(line, 0)
        self._per_line[line] = count + 1
        return count < MAX_FORCED


def _wrap_tree_run(recorder: Recorder, hooks: _CompileHooks, original: Any) -> Any:
    """Each call of a compiled function: on its fast lane (:mod:`.call_lane`) once its first
    calls are timed, two clock reads and a dictionary's worth of work; the general way
    otherwise (a row of its own, a sample of them timed on the GPU)."""
    general = _general_run(recorder, hooks, original)
    lane, now, ident_of, calls = hooks.lane, time.perf_counter_ns, threading.get_ident, \
        recorder.compiled_call

    @functools.wraps(original)
    def run(manager: Any, new_inputs: Any, function_id: Any) -> Any:
        known = manager.__dict__.get(KNOWN_ATTR, _NONE_KNOWN).get(function_id)
        log = lane.logs.get(known[0]) if known is not None else None
        ident = ident_of()
        if log is None or log.owner != ident or ident in calls or not recorder.enabled:
            return general(manager, new_inputs, function_id)
        t0 = now()
        if t0 >= log.due:
            return general(manager, new_inputs, function_id)
        calls[ident] = call = reset(log.call)
        try:
            return original(manager, new_inputs, function_id)
        except Exception:
            failed_calls.failed(recorder, call, new_inputs, sys._getframe(1))
            raise
        finally:
            del calls[ident]
            t1 = now()
            if call.replayed and not call.captured:
                log.times.append(t0)
                log.times.append(t1)
            else:  # it recorded, warmed up, ran eagerly or raised: a row of its own
                _emit_call(recorder, call, t0 - recorder.t0, None, False)

    return run


def _general_run(recorder: Recorder, hooks: _CompileHooks, original: Any) -> Any:
    seen: set[int] = set()

    def run(manager: Any, new_inputs: Any, function_id: Any) -> Any:
        ident = threading.get_ident()
        if not recorder.enabled or ident in recorder.compiled_call:
            return original(manager, new_inputs, function_id)
        # on the manager: a new one (torch._dynamo.reset()) numbers its functions from 0 again
        fn, compile_id = manager.__dict__.get(KNOWN_ATTR, _NONE_KNOWN).get(function_id) \
            or _first_call(recorder, manager, new_inputs, function_id)
        call = CompiledCall(fn, compile_id)
        first = fn not in seen
        seen.add(fn)
        recorder.compiled_call[ident] = call
        timer = recorder.timer
        token = timer.start() if timer is not None and hooks.sample.due(fn) else None
        t0 = recorder.now()
        try:
            return original(manager, new_inputs, function_id)
        except Exception:
            failed_calls.failed(recorder, call, new_inputs, sys._getframe(1))
            raise
        finally:
            recorder.compiled_call.pop(ident, None)
            _emit_call(recorder, call, t0, token, first)
            _open_lane(hooks, call)

    return run


def _open_lane(hooks: _CompileHooks, call: CompiledCall) -> None:
    """After a call that replayed its graph: once the function's first calls are timed, its
    calls take the fast lane until its next timed one is due."""
    due = hooks.sample.due_at(call.fn)
    if due and call.replayed and not call.captured:
        hooks.lane.open(call.fn, call.compile_id, due)
        hooks.lane.timed(call.fn, due)


def _first_call(recorder: Recorder, manager: Any, new_inputs: Any,
                function_id: Any) -> tuple[int, str]:
    """A tree function's first call (one per compile): its compiled function, compile id
    and the copies its inputs take, looked up once."""
    compile_id = compat.tree_compile_id(manager, function_id)
    fn = _function_of(recorder, compile_id, sys._getframe(2))  # run's caller
    count, size = compat.tree_input_copies(manager, function_id, new_inputs)
    recorder.emit(sr.TreeInputs(recorder.now(), fn, compile_id, count, size))
    manager.__dict__.setdefault(KNOWN_ATTR, {})[function_id] = (fn, compile_id)
    return fn, compile_id


def _function_of(recorder: Recorder, compile_id: str, caller: FrameType | None) -> int:
    """One function per dynamo frame id (the F of compile id F/N); ``caller``: the frame
    that called the tree, below which dynamo runs the function."""
    frame_key = compile_id.split("/")[0] if compile_id else "?"
    function = recorder.known_function(("compiled", frame_key))
    if function is not None:
        return function
    frame = _compiled_function_frame(recorder, caller)
    name, file, line = _compiled_frame(recorder, frame)
    fn = recorder.function_id(("compiled", frame_key), name, COMPILED_FUNCTION, file, line,
                              compile_id)
    if frame is not None and recorder.history is not None:  # its calls before compiling
        recorder.history.claim(frame.f_code, fn)
    return fn


def _compiled_function_frame(recorder: Recorder, frame: FrameType | None) -> FrameType | None:
    """The frame dynamo runs: the user's function, or a torch module's forward."""
    while frame is not None and _is_machinery(recorder, frame.f_code.co_filename):
        frame = frame.f_back
    return frame


def _compiled_frame(recorder: Recorder, frame: FrameType | None) -> tuple[str, str, int]:
    """(name, file, line) of the compiled function run in ``frame``: where the script
    defines it, or for a library's function or a torch module the script's line that calls
    it."""
    if frame is None:
        return ("<compiled>", "", 0)
    code = frame.f_code
    name = qualname(code)
    module = frame.f_locals.get("self") if code.co_name in compat.MODULE_CALLS else None
    if module is not None:  # a compiled nn.Module: dynamo runs Module._call_impl
        module = compat.compiled_module(module)  # torch.compile(module) wraps it
        name = f"{type(module).__qualname__}.forward"
    else:  # a method, maybe under a decorator (transformers' forward)
        name = _method_name(frame.f_locals.get("self"), code) or name
    kind = recorder.stacks.kind(code.co_filename)
    if kind == USER:
        return (name, code.co_filename, code.co_firstlineno)
    callers = (USER,) if kind == LIBRARY else CULPRIT_KINDS
    caller = frame.f_back
    while caller is not None and recorder.stacks.kind(caller.f_code.co_filename) not in callers:
        caller = caller.f_back
    if caller is None:
        return (name, code.co_filename, code.co_firstlineno)
    return (name, caller.f_code.co_filename, caller.f_lineno)


def _method_name(owner: Any, code: Any) -> str | None:
    """The qualified name of the method of ``owner``'s class whose code ``code`` is (or one
    of the functions it wraps): for a decorated method (transformers' ``forward`` under
    ``can_return_tuple``), the name the decorator copied from the method, not the
    decorator's ``wrapper``."""
    if not isinstance(owner, torch.nn.Module):
        return None
    place = _place(code)  # dynamo may run a transformed copy of the method's code
    for klass in type(owner).__mro__:
        for attr, value in vars(klass).items():
            if any(_place(getattr(f, "__code__", None)) == place for f in _unwrapped(value)):
                return str(getattr(value, "__qualname__", attr))
    return None


def _place(code: Any) -> tuple[str, str, int] | None:
    if code is None:
        return None
    return (str(code.co_name), str(code.co_filename), int(code.co_firstlineno))


def _unwrapped(function: Any) -> list[Any]:
    """A function and those it wraps (``__wrapped__``, as functools.wraps sets it)."""
    chain = [function]
    while len(chain) < 8 and hasattr(chain[-1], "__wrapped__"):
        chain.append(chain[-1].__wrapped__)
    return chain


def _is_machinery(recorder: Recorder, path: str) -> bool:
    """Torch's compile machinery between a compiled function and the tree, never the
    function itself."""
    kind = recorder.stacks.kind(path)
    if kind is None or compat.is_inductor_code(path) or path.startswith("<"):
        return True  # graphdoctor, Inductor's generated modules, FX's generated code
    if kind != TORCH:
        return False
    return compat.is_torch_machinery(path)


def _emit_call(recorder: Recorder, call: CompiledCall, t0: int, token: TimerToken | None,
               first: bool) -> None:
    """One call row; its mode says what the tree did: warm up (a function's first run),
    record, replay, or run eagerly (a skipped graph, or a tree stuck outside replay)."""
    dur = recorder.now() - t0
    if call.captured:
        mode = RECORDING_CALL
    elif call.replayed:
        mode = REPLAYING_CALL
    else:
        mode = WARMUP_CALL if first else EAGER_CALL
    row = Call(t0, dur, -1, call.fn, mode, -1)
    timer = recorder.timer
    if token is None or timer is None:
        recorder.emit(row)
    else:
        timer.stop(token, row)
