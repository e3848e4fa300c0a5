"""Eager calls from before anyone asked: a flight recorder of the user's own functions.

A capture names the code it ran only when it happens, and torch.compile learns of a function
only when it first runs it; real scripts run that code eagerly before both (the recipe's
warmup steps, a decode loop run plainly before it is compiled). So from the start of the
run, calls of the user's functions are timed, host time and GPU time from a pair of CUDA
events, up to ``TIMED_CALLS`` per function, and the latest ``KEPT`` of them are kept in
memory: the first calls of a process run cold (caches, clocks), so the latest ones are what
a replay is fairly compared with. A library's function is kept only where the user's code
calls it (``model(x)`` into a library's ``forward``), not the library's own inner calls; and
torch's own step parts (an ``nn.Module``'s forward, ``Tensor.backward``, an optimizer's
step: :mod:`graphdoctor.record.step_parts`) only at the calls the user's code
makes itself, what PyTorch's recipe captures inline (its warmup loop is their eager calls).

Three things claim kept calls (the cold first call among them left out):
- a capture, ``make_graphed_callables`` or torch.compile names a function it ran
  (:meth:`EagerHistory.claim`);
- a captured block that is inline code (``model(x)``, ``loss.backward()``, ``opt.step()``
  under ``torch.cuda.graph``) is timed by the user function that made every one of those
  calls eagerly, the smallest such (:meth:`EagerHistory.covering`); what each function
  calls is learnt from one ``CALL`` event per call site, switched off after it;
- a graph that replays inside a user function that ran before it existed (a training step
  whose blocks ``make_graphed_callables`` wrapped, a decode loop whose step torch.compile
  wrapped) makes that function its step: its kept calls are the step without the graph,
  and its later calls the step with it (:meth:`EagerHistory.replaying`).

Cost: ``sys.monitoring`` calls back on each function's first start; torch's and other
libraries' code is switched off right there (``DISABLE``), and so is a user function once it
has had ``TIMED_CALLS`` calls or is claimed (then the eager-call timer follows it). A long
run pays for the first calls of each of its own functions, and for nothing after. CUDA
event pairs of calls no longer kept are reused, at most ``MAX_TIMED`` held at once.
"""

from __future__ import annotations

import inspect
import sys
import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import CodeType, FrameType
from typing import Any

from graphdoctor.record.calls import SYS_MONITORING as _monitoring
from graphdoctor.record.calls import (
    Monitor,
    as_called,
    call_key,
    callee_code,
    monitoring_available,
)
from graphdoctor.record.captured_names import FRAME_VAR, is_number
from graphdoctor.record.recorder import Recorder, TimerSource, TimerToken, Uninstall
from graphdoctor.record.step_parts import called_by_user_itself, torch_step_part
from graphdoctor.trace.event_kinds import Call
from graphdoctor.trace.model import LIBRARY, PYTHON, TORCH, USER
from graphdoctor.trace.names import EAGER_CALL, REPLAYING_CALL, STEP_FUNCTION, WARMUP_CALL
from graphdoctor.trace.spool import records as sr

TIMED_CALLS = 256  # per function, from its first; then it costs nothing more
KEPT = 32  # the latest timed calls of a function, what medians are taken from
MAX_TIMED = 4096  # CUDA event pairs held at once for kept calls
STEP_CALLS = 3  # kept calls a step function needs besides its cold first one
NUMBERS_KEPT = 8  # distinct numbers kept per argument of a user function
REACH = 4  # how deep a covering function's calls into other user functions are followed
_NOT_PLAIN_CALLS = (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ITERABLE_COROUTINE
                    | inspect.CO_ASYNC_GENERATOR)  # their PY_START/PY_RETURN are not one call


@dataclass
class _Call:
    t0: int
    dur: int
    mode: str
    token: TimerToken | None


# a call under way: its start, mode, GPU timer token, and its frame, by which its return is
# told from that of a call not counted (torch's own, of the same code) or of one that raised
_Open = tuple[int, str, TimerToken | None, FrameType]


@dataclass
class _Function:
    calls: deque[_Call] = field(default_factory=deque)  # the latest KEPT
    timed: int = 0  # calls timed so far, kept or not
    open: dict[int, list[_Open]] = field(default_factory=dict)  # by thread
    makes: set[str] = field(default_factory=set)  # what it calls (calls.call_key)
    inner: set[CodeType] = field(default_factory=set)  # the user functions it calls
    step: int = -1  # its function id once a graph replays inside it
    # the numbers its calls were given, by argument: what a graph that froze one is told of
    arguments: dict[str, list[Any]] | None = None  # None: a library's function, not kept
    users_own: bool = False  # torch's: only the user's own calls of it count


class EagerHistory:
    """Keeps the first calls of each user function until something claims them."""

    def __init__(self, recorder: Recorder, timer: TimerSource | None = None):
        self._rec = recorder
        # the GPU timer its calls' tokens come from: the recorder's, unless the source that
        # installs it keeps one of its own (the CUPTI layer's, for scripts without torch)
        self._timer = timer or (lambda: recorder.timer)
        self._monitor = Monitor(on_lost=self._lost)
        self._functions: dict[CodeType, _Function] = {}
        self._places: dict[tuple[str, int, str], CodeType] = {}  # where each is defined
        self._claimed: set[CodeType] = set()
        self._held = 0  # CUDA event pairs held by kept calls
        self._stepped: set[int] = set()  # graphs whose step is known

    def install(self) -> Uninstall | None:
        if not monitoring_available() or not self._rec.config.eager_calls:
            return None
        events = _monitoring.events
        if not self._monitor.claim({events.PY_START: self._on_start,
                                    events.PY_RETURN: self._on_return,
                                    events.CALL: self._on_call}):
            self._rec.note("eager calls before a capture", "no sys.monitoring tool id was free")
            return None
        self._monitor.set_global(events.PY_START | events.PY_RETURN)
        return self._monitor.release

    def _lost(self) -> None:
        self._rec.note("eager calls before a capture", "the script took every free "
                       "sys.monitoring tool id, so their timing stopped")

    # -- claims ------------------------------------------------------------------------------
    def claim(self, code: CodeType, fn: int, part: bool = False) -> None:
        """``code`` is function ``fn`` now: its kept calls go to the spool as its eager
        calls, the cold first one left out, and it is no longer kept here. A torch
        function's calls are kept for an inline captured block that has it as a ``part``;
        where ``make_graphed_callables`` or torch.compile claims one (an ``nn.Sequential``),
        its eager figures stay those of the step it replays in, as before it was kept."""
        self._claimed.add(code)
        original = self._places.get(_place(code), code)  # torch.compile runs a rebuilt code
        self._claimed.add(original)
        kept = self._functions.pop(original, None)
        if kept is not None and (part or not kept.users_own):
            self._hand_over(kept, fn)
        elif kept is not None:
            for call in kept.calls:
                self._let_go(call)

    def covering(self, makes: Sequence[str]) -> CodeType | None:
        """The user function, with kept calls, that made every call in ``makes``, directly
        or through user functions it called; the one that made fewest besides."""
        wanted = set(makes)
        if not wanted:
            return None
        best: tuple[int, CodeType] | None = None
        for code, function in list(self._functions.items()):
            if not function.calls or function.step >= 0 or code in self._claimed \
                    or function.users_own:
                continue
            reach = self._reach(function)
            if wanted <= reach and (best is None or len(reach) < best[0]):
                best = (len(reach), code)
        return best[1] if best else None

    def has_calls(self, code: CodeType) -> bool:
        """Whether ``code`` has kept calls to hand over when claimed."""
        function = self._functions.get(self._places.get(_place(code), code))
        return function is not None and bool(function.calls)

    def _reach(self, function: _Function, depth: int = REACH) -> set[str]:
        reach = set(function.makes)
        for code in function.inner if depth else ():
            inner = self._functions.get(code)
            if inner is not None and inner is not function:
                reach |= self._reach(inner, depth - 1)
        return reach

    def replaying(self, graph: int) -> None:
        """``graph`` replays: the innermost user function on the stack (or, on autograd's
        own thread, on the main thread's) that ran without it becomes its step."""
        if graph in self._stepped:
            return
        found = _innermost(self._functions, sys._getframe(1)) or _innermost(
            self._functions, sys._current_frames().get(threading.main_thread().ident or 0))
        if found is None:
            return
        code, function = found
        if function.step < 0:
            function.step = self._rec.code_function_id(code, STEP_FUNCTION, ("step", code))
            self._hand_over(function, function.step)
            function.timed = 0  # as many calls again, now with the graph
        self._stepped.add(graph)
        self._rec.emit(sr.GraphStep(graph, function.step))

    def _hand_over(self, function: _Function, fn: int) -> None:
        calls = list(function.calls)
        function.calls.clear()
        if calls and function.timed <= KEPT:  # the cold first call is among them
            self._let_go(calls.pop(0))
        for call in calls:
            self._emit(call, fn, call.mode)

    def _emit(self, call: _Call, fn: int, mode: str) -> None:
        row = Call(call.t0, call.dur, -1, fn, mode, -1)
        timer = self._timer()
        if call.token is None or timer is None:
            self._rec.emit(row)
            return
        self._held -= 1
        timer.settle(call.token, row)

    def _let_go(self, call: _Call) -> None:
        self._release(call.token)

    def _release(self, token: TimerToken | None) -> None:
        timer = self._timer()
        if token is not None and timer is not None:
            self._held -= 1
            timer.release(token)

    # -- sys.monitoring callbacks ------------------------------------------------------------
    def _on_start(self, code: CodeType, offset: int) -> Any:
        function = self._functions.get(code)
        if function is None:
            if not self._keeps(code, sys._getframe(1)):
                return _monitoring.DISABLE
            function = self._functions[code] = _Function()
            if self._rec.stacks.is_user_code(code):
                function.arguments = {}
            function.users_own = self._rec.stacks.kind(code.co_filename) == TORCH
            self._places[_place(code)] = code
            self._monitor.add_local(code, _monitoring.events.CALL)
        if function.timed >= TIMED_CALLS or code in self._claimed:
            return _monitoring.DISABLE
        if self._rec.capturing_anywhere or not self._rec.enabled or not self._counts(function):
            return None
        mode = WARMUP_CALL if self._rec.in_warmup else EAGER_CALL
        if function.arguments is not None:
            _note_numbers(function.arguments, code, sys._getframe(1))
        frame, opened = sys._getframe(1), function.open.setdefault(threading.get_ident(), [])
        if opened:  # a call of it under way, or one that raised: dropped
            self._drop_finished(opened, frame)
        opened.append((self._rec.now(), mode, self._start_timer(), frame))
        return None

    def argument_values(self, code: CodeType, name: str) -> list[Any]:
        function = self._functions.get(self._places.get(_place(code), code))
        arguments = function.arguments if function is not None else None
        return list(arguments.get(name, ())) if arguments else []

    def _keeps(self, code: CodeType, frame: FrameType) -> bool:
        """A plain function of the user's, or a library's that the user's code called; not
        yet claimed, and not a rebuilt copy of one kept already (the code torch.compile runs
        in place of the function's own)."""
        if (code in self._claimed or code.co_flags & _NOT_PLAIN_CALLS
                or self._places.get(_place(code), code) is not code):
            return False
        kind = self._rec.stacks.kind(code.co_filename)
        if kind == TORCH:
            return torch_step_part(code) and called_by_user_itself(self._rec, frame)
        return kind == USER or (kind == LIBRARY and self._called_by_user(frame))

    def _counts(self, function: _Function) -> bool:
        """Whether this call of a kept function, starting, is kept: torch's only where the
        user's own code made it (``sys._getframe(2)``: the called frame, above this and its
        callback). Its return is told apart by its frame (:meth:`_closed`), which costs a
        fraction of this walk up the stack."""
        return not function.users_own or called_by_user_itself(self._rec, sys._getframe(2))

    def _called_by_user(self, frame: FrameType) -> bool:
        caller = frame.f_back
        while caller is not None:
            kind = self._rec.stacks.kind(caller.f_code.co_filename)
            if kind not in (TORCH, PYTHON):  # through nn.Module.__call__ and the like
                return kind == USER
            caller = caller.f_back
        return False

    def _start_timer(self) -> TimerToken | None:
        timer = self._timer()
        if timer is None or self._held >= MAX_TIMED:
            return None
        token = timer.start()
        self._held += token is not None
        return token

    def _on_return(self, code: CodeType, offset: int, retval: Any) -> Any:
        function = self._functions.get(code)
        if function is None:  # not the user's, or claimed: the eager-call timer has it
            return _monitoring.DISABLE
        opened = function.open.get(threading.get_ident())
        if not opened:
            return _monitoring.DISABLE if function.timed >= TIMED_CALLS else None
        closed = self._closed(opened, sys._getframe(1))
        if closed is None:  # a call not counted: torch's own, inside the user's
            return None
        t0, mode, token, _ = closed
        timer = self._timer()
        if token is not None and timer is not None:
            timer.end(token)
        call = _Call(t0, self._rec.now() - t0, mode, token)
        function.timed += 1
        if function.step >= 0:  # a call with its graph: to the spool as it comes
            self._emit(call, function.step, REPLAYING_CALL)
            return None
        if len(function.calls) >= KEPT:
            self._let_go(function.calls.popleft())
        function.calls.append(call)
        return None

    def _drop_finished(self, opened: list[_Open], frame: FrameType) -> None:
        """The open calls whose frames are no longer on the stack above ``frame`` (they
        raised), taken off, their CUDA events back to the timer."""
        running = set()
        caller = frame.f_back
        while caller is not None:
            running.add(caller)
            caller = caller.f_back
        for call in [c for c in opened if c[3] not in running]:
            opened.remove(call)
            self._release(call[2])

    def _closed(self, opened: list[_Open], frame: FrameType) -> _Open | None:
        """The open call whose frame returns, taken off with the calls above it: those
        raised instead of returning (a return fires for none of them), and their CUDA
        events go back to the timer; one that raised below it goes at the next start
        (:meth:`_drop_finished`). None where no open call is this frame's."""
        for index in range(len(opened) - 1, -1, -1):
            if opened[index][3] is frame:
                for stale in opened[index + 1:]:
                    self._release(stale[2])
                call = opened[index]
                del opened[index:]
                return call
        return None

    def _on_call(self, code: CodeType, offset: int, target: Any, arg0: Any) -> Any:
        """What a kept function calls, once per call site: for :meth:`covering`."""
        function = self._functions.get(code)
        if function is not None:
            target = as_called(target, arg0)
            key = call_key(self._rec, target)
            if key:
                function.makes.add(key)
            inner = callee_code(target)
            if inner is not None:
                function.inner.add(inner)
        return _monitoring.DISABLE


def _note_numbers(seen: dict[str, list[Any]], code: CodeType, frame: FrameType) -> None:
    """The distinct numbers (at most ``NUMBERS_KEPT``) each argument was given."""
    if FRAME_VAR is None:
        return
    for name in code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]:
        try:
            value = FRAME_VAR(frame, name)
        except (NameError, ValueError):
            continue
        if is_number(value):
            values = seen.setdefault(name, [])
            if value not in values and len(values) < NUMBERS_KEPT:
                values.append(value)


def _innermost(functions: dict[CodeType, _Function],
               frame: FrameType | None) -> tuple[CodeType, _Function] | None:
    """The innermost frame's function that is a step already, or ran often enough before
    to be one (a helper that timed one eager loop is not a step)."""
    while frame is not None:
        function = functions.get(frame.f_code)
        if function is not None and not function.users_own \
                and (len(function.calls) > STEP_CALLS or function.step >= 0) \
                and function.timed < TIMED_CALLS:
            return frame.f_code, function
        frame = frame.f_back
    return None


def _place(code: CodeType) -> tuple[str, int, str]:
    return (code.co_filename, code.co_firstlineno, code.co_name)


def install(recorder: Recorder, timer: TimerSource | None = None) -> Uninstall | None:
    """The source: keep the first calls of the user's functions, claimable through
    ``recorder.history``; ``timer``: the GPU timer of the source that installs it, if not
    the recorder's."""
    if recorder.history is not None:
        return None  # installed already, from the start (the CUPTI layer's, for --cupti)
    history = EagerHistory(recorder, timer)
    recorder.history = history
    return history.install()
