"""Which functions a capture ran, and how long they take when run eagerly.

Both use ``sys.monitoring`` (Python 3.12+), which costs nothing for code it does not watch.
During a manual capture only the capturing frame's own code object is watched, for its CALL
events: each user function it calls (``step`` in ``with torch.cuda.graph(g): out = step(x)``,
``Model.forward`` behind ``model(x)``) is a top-level callee of the capture. No per-op or
per-call hook runs anywhere else, so the capture costs what it costs without graphdoctor.
Afterwards just those code objects are watched for PY_START and PY_RETURN, so every eager
call of them is timed on the host, and a sample of them on the GPU too
(:mod:`graphdoctor.record.device.gpu_sample`). These eager times are the baseline a replay is
compared with; without them graphdoctor says it has no baseline rather than guessing one.
A watched function that starts while its thread captures (the forward pass that
``make_graphed_callables`` captures) is a callee of that capture.

A captured block of inline code calls torch itself (PyTorch's own recipe: ``model(x)`` of an
``nn.Sequential``, ``loss_fn(...)``, ``loss.backward()``, ``opt.step()`` at the top level of
the script). Those calls are a step's parts too (:mod:`graphdoctor.record.eager.step_parts`),
timed only where the user's own code makes them: the same ``forward`` runs for every
``nn.Sequential`` inside a model, and only the script's own call is the step's.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import BuiltinFunctionType, CodeType, FrameType, FunctionType, MethodType, ModuleType
from typing import Any

from graphdoctor.record.device.gpu_sample import GpuSample, sampled_note
from graphdoctor.record.eager.step_parts import called_by_user_itself, torch_step_part
from graphdoctor.record.recorder import CaptureState, Recorder, TimerSource, TimerToken
from graphdoctor.trace.event_kinds import Call
from graphdoctor.trace.names import EAGER_CALL, WARMUP_CALL

# Calls of torch that launch no work of their own inside a capture: streams, graphs, and
# graphdoctor's sight of the capture machinery itself.
_NOT_WORK = ("torch.cuda", "torch._C._cuda", "torch.utils")
EAGER_TIMES_LOST = "eager time of captured functions"  # the part a note is about
SCRIPT_TOOK_THE_ID = ("the script asked for graphdoctor's sys.monitoring tool id and no other "
                      "was free, so calls from then on were not timed")
_TOOL_NAME = "graphdoctor"
_TOOL_IDS = (5, 4, 3)  # the ids sys.monitoring leaves to tools other than debuggers/profilers
# sys.monitoring (3.12+), or None. Typed Any so that mypy run by Python 3.10 or 3.11, whose
# stubs lack it, checks this module as well.
SYS_MONITORING: Any = getattr(sys, "monitoring", None)


def monitoring_available() -> bool:
    return SYS_MONITORING is not None


class Monitor:
    """graphdoctor's one ``sys.monitoring`` tool id, claimed on first use (a capture) and
    given up with the recording. Never one the script holds; to the script it looks free
    (``get_tool`` answers None for it); and should the script ask for it (``use_tool_id``),
    graphdoctor first moves its callbacks and watched code to another free id, or with none
    free, stops watching (``on_lost``): the script's claim succeeds either way."""

    def __init__(self, on_lost: Callable[[], None] = lambda: None) -> None:
        self.tool: int | None = None
        self._on_lost = on_lost
        self._callbacks: dict[int, Any] = {}  # event -> callback
        self._local: dict[CodeType, int] = {}  # code -> the events watched on it
        self._global = 0  # events watched everywhere (the eager history's)
        self._original_use_tool_id: Any = None
        self._original_get_tool: Any = None

    def claim(self, callbacks: dict[int, Any]) -> bool:
        if self.tool is None:
            free = _free_tool_ids()
            if not free:
                return False  # every free id is taken: another tool owns them
            self._take(free[0])
            self._give_way_to_the_script()
        self._callbacks.update(callbacks)
        for event, callback in callbacks.items():
            SYS_MONITORING.register_callback(self.tool, event, callback)
        return True

    def add_local(self, code: CodeType, events: int) -> None:
        self._set_local(code, self._local.get(code, 0) | events)

    def remove_local(self, code: CodeType, events: int) -> None:
        self._set_local(code, self._local.get(code, 0) & ~events)

    def set_global(self, events: int) -> None:
        self._global = events
        if self.tool is not None:
            SYS_MONITORING.set_events(self.tool, events)

    def release(self) -> None:
        if self._original_use_tool_id is not None:
            SYS_MONITORING.use_tool_id = self._original_use_tool_id
            SYS_MONITORING.get_tool = self._original_get_tool
            self._original_use_tool_id = self._original_get_tool = None
        if self.tool is not None:
            self._drop()

    def _set_local(self, code: CodeType, events: int) -> None:
        if self.tool is None:
            return
        if events:
            self._local[code] = events
        else:
            self._local.pop(code, None)
        SYS_MONITORING.set_local_events(self.tool, code, events)

    def _take(self, tool: int) -> None:
        SYS_MONITORING.use_tool_id(tool, _TOOL_NAME)
        self.tool = tool
        for event, callback in self._callbacks.items():
            SYS_MONITORING.register_callback(tool, event, callback)
        for code, events in self._local.items():
            SYS_MONITORING.set_local_events(tool, code, events)
        if self._global:
            SYS_MONITORING.set_events(tool, self._global)

    def _drop(self) -> None:
        """Leave the id as graphdoctor found it: no callback, no watched code, free."""
        tool, self.tool = self.tool, None
        if SYS_MONITORING.get_tool(tool) != _TOOL_NAME:
            return  # the script freed it (free_tool_id) behind graphdoctor's back
        for code in self._local:
            SYS_MONITORING.set_local_events(tool, code, 0)
        SYS_MONITORING.set_events(tool, 0)
        for event in self._callbacks:
            SYS_MONITORING.register_callback(tool, event, None)
        SYS_MONITORING.free_tool_id(tool)

    def _give_way_to_the_script(self) -> None:
        if self._original_use_tool_id is not None:
            return  # claimed again after stepping aside: already giving way
        original = self._original_use_tool_id = SYS_MONITORING.use_tool_id

        def use_tool_id(tool_id: int, name: str) -> None:
            if tool_id == self.tool:
                self._move()
            original(tool_id, name)

        SYS_MONITORING.use_tool_id = use_tool_id
        original_get = self._original_get_tool = SYS_MONITORING.get_tool

        def get_tool(tool_id: int) -> str | None:
            """The id graphdoctor holds looks free to the script, as it is to its claim."""
            return None if tool_id == self.tool else original_get(tool_id)

        SYS_MONITORING.get_tool = get_tool

    def _move(self) -> None:
        """Carry the callbacks and watched code to another free id, or stop watching."""
        held = self.tool
        self._drop()
        free = [t for t in _free_tool_ids() if t != held]
        if free:
            self._take(free[0])
        else:
            self._local.clear()
            self._global = 0
            self._on_lost()


def _free_tool_ids() -> list[int]:
    return [t for t in _TOOL_IDS if SYS_MONITORING.get_tool(t) is None]


def innermost_user_frame(recorder: Recorder, frame: FrameType | None) -> FrameType | None:
    while frame is not None and not recorder.stacks.is_user_code(frame.f_code):
        frame = frame.f_back
    return frame


def callee_code(target: Any) -> CodeType | None:
    """The code object a call of ``target`` runs first in the user's program: a function's
    own, a bound method's function's, or a module's ``forward`` behind ``module(x)``. None
    for compiled code: a Cython function (CuPy's ``Stream.end_capture``) has a code object
    too, but it never runs as Python (no frame, no PY_START), so nothing of it is timed."""
    if isinstance(target, MethodType):
        target = target.__func__
    if isinstance(target, FunctionType):
        return unwrapped(target).__code__
    forward = getattr(type(target), "forward", None)  # torch.nn.Module.__call__ runs forward
    return forward.__code__ if isinstance(forward, FunctionType) and callable(target) else None


# torch's decorators that only set a mode around the user's function (``@torch.no_grad()``,
# ``@torch.inference_mode()``, ``@torch.autocast(...)``): the function they wrap is the work
CONTEXT_DECORATORS = (("torch", "utils", "_contextlib.py"), ("torch", "amp", "autocast_mode.py"))


def unwrapped(function: FunctionType) -> FunctionType:
    """The user's function behind torch's mode-setting decorators, whose wrapper runs torch's
    code first (a step under ``@torch.no_grad()`` was never seen as the capture's callee, so
    its eager calls were never timed); any other function as it is."""
    for _ in range(len(CONTEXT_DECORATORS) * 2):  # decorators stacked a few deep at most
        inner = getattr(function, "__wrapped__", None)
        parts = tuple(function.__code__.co_filename.replace("\\", "/").split("/")[-3:])
        if not isinstance(inner, FunctionType) or parts not in CONTEXT_DECORATORS:
            break
        function = inner
    return function


class CallSiteWatcher:
    """Watches the calls the capturing frame makes while one of its captures runs."""

    def __init__(self, recorder: Recorder, monitor: Monitor):
        self._recorder = recorder
        self._monitor = monitor
        self._claimed = False

    def start(self, frame: FrameType | None) -> CodeType | None:
        """Watch ``frame``'s code; return it (to pass to ``stop``), or None if not watched."""
        if frame is None or not monitoring_available() or not self._claim():
            return None
        self._monitor.add_local(frame.f_code, SYS_MONITORING.events.CALL)
        return frame.f_code

    def stop(self, code: CodeType | None) -> None:
        if code is not None:
            self._monitor.remove_local(code, SYS_MONITORING.events.CALL)

    def _claim(self) -> bool:
        if not self._claimed:
            self._claimed = self._monitor.claim({SYS_MONITORING.events.CALL: self._on_call})
        return self._claimed

    def _on_call(self, code: CodeType, offset: int, target: Any, arg0: Any) -> Any:
        try:
            state = self._recorder.capture_on_this_thread()
            if state is None:
                return None
            target = as_called(target, arg0)
            key = call_key(self._recorder, target)
            if key and key not in state.makes:
                state.makes.append(key)
            called = callee_code(target)
            if called is not None and self._recorder.stacks.is_user_code(called):
                note_callee(state, called)
            elif (name := torch_work(target)) and name not in state.uncovered:
                state.uncovered.append(name)
                if called is not None and torch_step_part(called):
                    state.torch_parts[name] = called
            return None
        except Exception:  # noqa: BLE001 - called inside the script's own lines
            return SYS_MONITORING.DISABLE


def torch_work(target: Any) -> str:
    """The name of a call of torch's own that launches GPU work (a tensor method such as
    ``loss.backward``, a torch module, an optimizer's ``step``, a ``torch.*`` function),
    which no eager timing of the user's functions covers; empty for anything else."""
    owner = getattr(target, "__self__", None)
    where = type(owner).__module__ if owner is not None and not isinstance(owner, type) else ""
    if not where:
        where = getattr(target, "__module__", None) or type(target).__module__
    if not where.startswith("torch") or where.startswith(_NOT_WORK):
        return ""
    if owner is not None and not isinstance(owner, type):  # a method: Tensor.backward
        return f"{type(owner).__qualname__}.{getattr(target, '__name__', '?')}"
    return str(getattr(target, "__name__", None) or type(target).__qualname__)


def as_called(target: Any, arg0: Any) -> Any:
    """The callable as the code called it. A CALL event passes a method call ``opt.step()``
    as the class's function and ``opt``: bound again here, so that it reads as
    ``Adam.step`` of that ``opt``, not a function ``step``."""
    name = getattr(target, "__name__", None)
    if not isinstance(name, str) or isinstance(target, MethodType) \
            or arg0 is SYS_MONITORING.MISSING:
        return target
    try:
        bind = getattr(target, "__get__", None)
        if bind is not None and getattr(type(arg0), name, None) is target:
            return bind(arg0, type(arg0))
    except Exception:  # noqa: BLE001  # a descriptor of the script's that raises
        pass
    return target


def call_key(recorder: Recorder, target: Any) -> str:
    """What a call launches work through, in the same words in a captured block and in eager
    code: a user function by its place, torch's by name (``Tensor.backward``), and either
    with the object it is bound to where that is a module or an optimizer (the same
    ``model`` and ``opt`` in both), not a tensor (``loss`` in one, ``static_loss`` in the
    other). Empty for calls that launch no work of their own (builtins, ``torch.cuda``)."""
    called = callee_code(target)
    if called is not None and recorder.stacks.is_user_code(called):
        name = f"{called.co_filename}:{called.co_firstlineno}:{called.co_name}"
    else:
        name = torch_work(target)
    if not name:
        return ""
    owner = _bound_to(target)
    if owner is None or isinstance(owner, (type, ModuleType)) or hasattr(owner, "grad_fn"):
        return name
    return f"{name}@{id(owner):x}"


def _bound_to(target: Any) -> Any:
    """The object a call is bound to: the object itself for ``model(x)``, the owner of a
    bound method, None for a function."""
    if isinstance(target, (FunctionType, BuiltinFunctionType, MethodType)):
        return getattr(target, "__self__", None)
    return target


def note_callee(state: CaptureState, code: CodeType) -> None:
    if code not in state.callees:
        state.callees.append(code)


class EagerCallTimer:
    """Times every call of chosen code objects through ``sys.monitoring`` (3.12+), on the
    GPU a sample of them (:class:`~graphdoctor.record.device.gpu_sample.GpuSample`), or with
    ``limit``, each one's first ``limit`` calls: then its events are switched off where
    they fire (``DISABLE``), and a long eager loop pays for no more than those."""

    def __init__(self, recorder: Recorder, monitor: Monitor, timer: TimerSource | None = None,
                 limit: int | None = None):
        self._recorder = recorder
        self._monitor = monitor
        self._timer = timer or (lambda: recorder.timer)  # as EagerHistory's
        self._limit = limit
        self._timed: dict[int, int] = {}  # function id -> its calls timed so far
        self._watched: dict[CodeType, tuple[int, int]] = {}  # code -> (function id, graph)
        # function id -> its calls in progress: (start, mode, GPU timer token)
        self._open: dict[int, list[tuple[int, str, TimerToken | None]]] = {}
        self._claimed = False
        self._sample = GpuSample()  # which calls have their GPU time taken
        self._users_own: set[CodeType] = set()  # torch's code: timed where the user calls it

    @property
    def available(self) -> bool:
        return monitoring_available()

    def watch(self, code: CodeType, fn: int, graph: int, users_own: bool = False) -> bool:
        """Time ``code``'s calls as function ``fn``'s; ``users_own``: only those the user's
        own code makes (a torch step part of an inline captured block)."""
        if not self._recorder.config.eager_calls or not self.available:
            return False
        if code in self._watched:
            return True
        if not self._claimed:
            events = SYS_MONITORING.events
            self._claimed = self._monitor.claim({events.PY_START: self._on_start,
                                                 events.PY_RETURN: self._on_return})
            if not self._claimed:
                return False
        self._watched[code] = (fn, graph)
        if users_own:
            self._users_own.add(code)
        events = SYS_MONITORING.events
        self._monitor.add_local(code, events.PY_START | events.PY_RETURN)
        if self._recorder.history is not None:  # its calls from before it was watched
            self._recorder.history.claim(code, fn, users_own)
        return True

    def _on_start(self, code: CodeType, offset: int) -> Any:
        try:
            watched = self._watched.get(code)
            if watched is None or not self._recorder.enabled or not self._users_call(code):
                return None
            if self._done(watched[0]):
                return SYS_MONITORING.DISABLE
            if self._recorder.capturing_anywhere:
                state = self._recorder.capture_on_this_thread()
                if state is not None:
                    note_callee(state, code)
                return None
            timer = self._timer()
            token = timer.start() if timer is not None and self._sample.due(watched[0]) else None
            mode = WARMUP_CALL if self._recorder.in_warmup else EAGER_CALL
            self._open.setdefault(watched[0], []).append((self._recorder.now(), mode, token))
            return None
        except Exception:  # noqa: BLE001 - called inside the script's own lines
            return SYS_MONITORING.DISABLE

    def _users_call(self, code: CodeType) -> bool:
        """Whether this call counts: any call of the user's code; of torch's, the user's own
        (``sys._getframe(2)``: the called function's frame, above this and its callback)."""
        return code not in self._users_own or called_by_user_itself(self._recorder,
                                                                     sys._getframe(2))

    def _done(self, fn: int) -> bool:
        return self._limit is not None and self._timed.get(fn, 0) >= self._limit

    def _on_return(self, code: CodeType, offset: int, retval: Any) -> Any:
        try:
            watched = self._watched.get(code)
            if watched is None or not self._users_call(code):
                return None
            fn = watched[0]
            calls = self._open.get(fn)
            if not calls:
                return SYS_MONITORING.DISABLE if self._done(fn) else None
            self._timed[fn] = self._timed.get(fn, 0) + 1
            t0, mode, token = calls.pop()
            row = Call(t0, self._recorder.now() - t0, -1, fn, mode, -1)
            timer = self._timer()
            if token is None or timer is None:
                self._recorder.emit(row)
            else:
                timer.stop(token, row)
            return None
        except Exception:  # noqa: BLE001 - called inside the script's own lines
            return SYS_MONITORING.DISABLE

    def close(self) -> None:
        if self._sample.skipped:
            self._recorder.note("eager call GPU times", sampled_note("eager calls"))
        for code in self._watched:
            events = SYS_MONITORING.events
            self._monitor.remove_local(code, events.PY_START | events.PY_RETURN)
        self._watched.clear()
