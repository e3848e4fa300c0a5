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
step: :mod:`graphdoctor.record.eager.step_parts`) only at the calls the user's code
makes itself, what PyTorch's recipe captures inline (its warmup loop is their eager calls),
timed at the user's call sites (:mod:`graphdoctor.record.eager.part_sites`).

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
has had ``TIMED_CALLS`` calls or is claimed (then the eager-call timer follows it), and a
step part's call site once the part has. A long run pays for the first calls of each of its
own functions and parts, and for nothing after. Host time is taken for every call, GPU
time for a sample (``GPU_EVERY``): a CUDA event pair costs more host time than the callbacks.
Event pairs of calls no longer kept are reused, at most ``MAX_TIMED`` held at once.
"""

from __future__ import annotations

import inspect
import sys
import threading
from collections.abc import Sequence
from types import CodeType, FrameType
from typing import Any

from graphdoctor.record.device.gpu_sample import TIMED_FIRST
from graphdoctor.record.eager.calls import SYS_MONITORING as _monitoring
from graphdoctor.record.eager.calls import (
    Monitor,
    as_called,
    call_key,
    callee_code,
    monitoring_available,
)
from graphdoctor.record.eager.kept_calls import (
    GPU_EVERY,
    KEPT,
    MAX_TIMED,
    TIMED_CALLS,
    KeptCall,
    KeptFunction,
    innermost,
    place,
)
from graphdoctor.record.eager.open_calls import closed, drop_finished
from graphdoctor.record.eager.part_sites import PartSites, Site
from graphdoctor.record.eager.step_parts import torch_step_part
from graphdoctor.record.frozen.captured_names import note_numbers
from graphdoctor.record.recorder import Recorder, TimerSource, TimerToken, Uninstall
from graphdoctor.trace.event_kinds import Call
from graphdoctor.trace.model import LIBRARY, PYTHON, TORCH, USER
from graphdoctor.trace.names import EAGER_CALL, REPLAYING_CALL, STEP_FUNCTION, WARMUP_CALL
from graphdoctor.trace.spool import records as sr

NOTE_PART = "eager calls before a capture"
SAMPLED = (f"GPU time was taken for a sample of the user's eager calls: each function's first "
           f"{TIMED_FIRST}, then one in {GPU_EVERY}; every call's host time is kept")
REACH = 4  # how deep a covering function's calls into other user functions are followed
_NOT_PLAIN_CALLS = (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ITERABLE_COROUTINE
                    | inspect.CO_ASYNC_GENERATOR)  # their PY_START/PY_RETURN are not one call


class EagerHistory:
    """Keeps the first calls of each user function until something claims them."""

    def __init__(self, recorder: Recorder, timer: TimerSource | None = None):
        self._rec = recorder
        # the GPU timer its calls' tokens come from: the recorder's, unless the source that
        # installs it keeps one of its own (the CUPTI layer's, for scripts without torch)
        self._timer = timer or (lambda: recorder.timer)
        self._monitor = Monitor(on_lost=self._lost)
        self._sites = PartSites(self._monitor)
        self._functions: dict[CodeType, KeptFunction] = {}
        self._places: dict[tuple[str, int, str], CodeType] = {}  # where each is defined
        self._claimed: set[CodeType] = set()
        self._held = 0  # CUDA event pairs held by kept calls
        self._untimed = 0  # calls left out of the GPU sample
        self._stepped: set[int] = set()  # graphs whose step is known

    def install(self) -> Uninstall | None:
        if not monitoring_available() or not self._rec.config.eager_calls:
            return None
        events = _monitoring.events
        if not self._monitor.claim({events.PY_START: self._on_start,
                                    events.PY_RETURN: self._on_return,
                                    events.CALL: self._on_call,
                                    events.INSTRUCTION: self._on_instruction}):
            self._rec.note(NOTE_PART, "no sys.monitoring tool id was free")
            return None
        self._monitor.set_global(events.PY_START | events.PY_RETURN)
        self._watch_running(sys._getframe(1))
        return self._uninstall

    def _uninstall(self) -> None:
        self._monitor.release()
        if self._untimed:
            self._rec.note(NOTE_PART, SAMPLED)

    def _watch_running(self, frame: FrameType | None) -> None:
        """The user's code already running (the function around ``graphdoctor.recording()``)
        started before its start could be seen: its calls are watched from here."""
        while frame is not None:
            code = frame.f_code
            if self._rec.stacks.kind(code.co_filename) == USER:
                self._monitor.add_local(code, _monitoring.events.CALL)
            frame = frame.f_back

    def _lost(self) -> None:
        self._rec.note(NOTE_PART, "the script took every free "
                       "sys.monitoring tool id, so their timing stopped")

    # -- claims ------------------------------------------------------------------------------
    def claim(self, code: CodeType, fn: int, part: bool = False) -> None:
        """``code`` is function ``fn`` now: its kept calls go to the spool as its eager
        calls, the cold first one left out, and it is no longer kept here. A torch
        function's calls are kept for an inline captured block that has it as a ``part``;
        where ``make_graphed_callables`` or torch.compile claims one (an ``nn.Sequential``),
        its eager figures stay those of the step it replays in, as before it was kept."""
        self._claimed.add(code)
        original = self._places.get(place(code), code)  # torch.compile runs a rebuilt code
        self._claimed.add(original)
        kept = self._functions.pop(original, None)
        if kept is not None:
            kept.claimed = True
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
            if not function.calls or function.step >= 0 or function.claimed \
                    or function.users_own:
                continue
            reach = self._reach(function)
            if wanted <= reach and (best is None or len(reach) < best[0]):
                best = (len(reach), code)
        return best[1] if best else None

    def has_calls(self, code: CodeType) -> bool:
        """Whether ``code`` has kept calls to hand over when claimed."""
        function = self._functions.get(self._places.get(place(code), code))
        return function is not None and bool(function.calls)

    def _reach(self, function: KeptFunction, depth: int = REACH) -> set[str]:
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
        found = innermost(self._functions, sys._getframe(1))
        if found is None and threading.current_thread() is not threading.main_thread():
            # autograd's own thread replays a backward graph: the step is the main thread's
            found = innermost(self._functions,
                              sys._current_frames().get(threading.main_thread().ident or 0))
        if found is None:
            return
        code, function = found
        if function.step < 0:
            function.step = self._rec.code_function_id(code, STEP_FUNCTION, ("step", code))
            self._hand_over(function, function.step)
            function.timed = 0  # as many calls again, now with the graph
        self._stepped.add(graph)
        self._rec.emit(sr.GraphStep(graph, function.step))

    def _hand_over(self, function: KeptFunction, fn: int) -> None:
        calls = list(function.calls)
        function.calls.clear()
        if calls and function.timed <= KEPT:  # the cold first call is among them
            self._let_go(calls.pop(0))
        for call in calls:
            self._emit(call, fn, call.mode)

    def _emit(self, call: KeptCall, fn: int, mode: str) -> None:
        row = Call(call.t0, call.dur, -1, fn, mode, -1)
        timer = self._timer()
        if call.token is None or timer is None:
            self._rec.emit(row)
            return
        self._held -= 1
        timer.settle(call.token, row)

    def _let_go(self, call: KeptCall) -> None:
        self._release(call.token)

    def _release(self, token: TimerToken | None) -> None:
        timer = self._timer()
        if token is not None and timer is not None:
            self._held -= 1
            timer.release(token)

    # -- sys.monitoring callbacks ------------------------------------------------------------
    def _on_start(self, code: CodeType, offset: int) -> Any:
        try:
            function = self._functions.get(code)
            if function is None:
                if not self._keeps(code, sys._getframe(1)):
                    self._watch_parts_only(code)
                    return _monitoring.DISABLE
                function = self._functions[code] = KeptFunction()
                if self._rec.stacks.is_user_code(code):
                    function.arguments = {}
                self._places[place(code)] = code
                self._monitor.add_local(code, _monitoring.events.CALL)
            if function.timed >= TIMED_CALLS or function.claimed or function.users_own:
                return _monitoring.DISABLE  # done, or a step part (timed at its call sites)
            if self._rec.capturing_anywhere or not self._rec.enabled:
                return None
            mode = WARMUP_CALL if self._rec.in_warmup else EAGER_CALL
            if function.arguments is not None:
                note_numbers(function.arguments, code, sys._getframe(1))
            frame, opened = sys._getframe(1), function.open.setdefault(threading.get_ident(), [])
            if opened:  # a call of it under way, or one that raised: dropped
                for token in drop_finished(opened, frame):
                    self._release(token)
            opened.append((self._rec.now(), mode, self._start_timer(function), id(frame)))
            return None
        except Exception:  # noqa: BLE001 - called inside the script's own lines
            return _monitoring.DISABLE

    def _watch_parts_only(self, code: CodeType) -> None:
        """A generator or coroutine of the user's (a training loop that yields a loss a
        step) is no call of its own to time, but the step parts it calls are the user's."""
        if code.co_flags & _NOT_PLAIN_CALLS and self._rec.stacks.kind(code.co_filename) == USER:
            self._monitor.add_local(code, _monitoring.events.CALL)

    def argument_values(self, code: CodeType, name: str) -> list[Any]:
        function = self._functions.get(self._places.get(place(code), code))
        arguments = function.arguments if function is not None else None
        return list(arguments.get(name, ())) if arguments else []

    def _keeps(self, code: CodeType, frame: FrameType) -> bool:
        """A plain function of the user's, or a library's that the user's code called; not
        yet claimed, and not a rebuilt copy of one kept already (the code torch.compile runs
        in place of the function's own). torch's step parts are timed at their call sites."""
        if (code in self._claimed or code.co_flags & _NOT_PLAIN_CALLS
                or self._places.get(place(code), code) is not code):
            return False
        kind = self._rec.stacks.kind(code.co_filename)
        return kind == USER or (kind == LIBRARY and self._called_by_user(frame))

    def _called_by_user(self, frame: FrameType) -> bool:
        caller = frame.f_back
        while caller is not None:
            kind = self._rec.stacks.kind(caller.f_code.co_filename)
            if kind not in (TORCH, PYTHON):  # through nn.Module.__call__ and the like
                return kind == USER
            caller = caller.f_back
        return False

    def _start_timer(self, function: KeptFunction) -> TimerToken | None:
        """A GPU timer token for the call of ``function`` starting, where it is in the
        sample (:meth:`KeptFunction.gpu_due`)."""
        timer = self._timer()
        if timer is None or self._held >= MAX_TIMED:
            return None
        if not function.gpu_due():
            self._untimed += 1
            return None
        token = timer.start()
        self._held += token is not None
        return token

    def _on_return(self, code: CodeType, offset: int, retval: Any) -> Any:
        try:
            function = self._functions.get(code)
            if function is None or function.users_own:  # not kept here, or timed at its sites
                return _monitoring.DISABLE
            opened = function.open.get(threading.get_ident())
            if not opened:
                return _monitoring.DISABLE if function.timed >= TIMED_CALLS else None
            call, stale = closed(opened, sys._getframe(1))
            for token in stale:
                self._release(token)
            if call is None:  # a call not timed: one under way when its timing began
                return None
            t0, mode, token, _ = call
            self._finish(function, t0, mode, token)
            return None
        except Exception:  # noqa: BLE001 - called inside the script's own lines
            return _monitoring.DISABLE

    def _finish(self, function: KeptFunction, t0: int, mode: str, token: TimerToken | None) -> None:
        """A timed call of ``function`` has returned: kept, or with its graph, emitted."""
        timer = self._timer()
        if token is not None and timer is not None:
            timer.end(token)
        call = KeptCall(t0, self._rec.now() - t0, mode, token)
        function.timed += 1
        if function.claimed:  # handed over while it ran
            self._let_go(call)
        elif function.step >= 0:  # a call with its graph: to the spool as it comes
            self._emit(call, function.step, REPLAYING_CALL)
        else:
            if len(function.calls) >= KEPT:
                self._let_go(function.calls.popleft())
            function.calls.append(call)

    def _on_call(self, code: CodeType, offset: int, target: Any, arg0: Any) -> Any:
        """What a kept function calls, learnt once per call site (for :meth:`covering`),
        the site switched off then; a step part's site stays on, its calls timed there."""
        try:
            site = self._sites.site_at(code, offset)
            if site is False:
                target = as_called(target, arg0)
                self._learn_call(code, target)
                site = self._sites.learn(code, offset, self._part_called(code, target))
            if not isinstance(site, Site):
                return _monitoring.DISABLE
            return self._start_part(site, sys._getframe(1))
        except Exception:  # noqa: BLE001 - called inside the script's own lines
            return _monitoring.DISABLE

    def _learn_call(self, code: CodeType, target: Any) -> None:
        function = self._functions.get(code)
        if function is not None:
            key = call_key(self._rec, target)
            if key:
                function.makes.add(key)
            inner = callee_code(target)
            if inner is not None:
                function.inner.add(inner)

    def _part_called(self, code: CodeType, target: Any) -> KeptFunction | None:
        """The step part the user's own ``code`` calls, kept, where it is one."""
        called = callee_code(target)
        kinds = self._rec.stacks
        if called is None or kinds.kind(code.co_filename) != USER \
                or kinds.kind(called.co_filename) != TORCH or not torch_step_part(called):
            return None
        function = self._functions.get(called)
        if function is None:
            function = self._functions[called] = KeptFunction(users_own=True)
            self._places[place(called)] = called
        function.claimed = function.claimed or called in self._claimed
        return function

    def _start_part(self, site: Site, frame: FrameType) -> Any:
        """The user's ``frame`` calls a step part at ``site``: its call is open until the
        instruction after the site runs; the site is switched off once the part is done."""
        function: KeptFunction = site.part
        if function.timed >= TIMED_CALLS or function.claimed:
            return _monitoring.DISABLE
        if self._rec.capturing_anywhere or not self._rec.enabled:
            return None
        mode = WARMUP_CALL if self._rec.in_warmup else EAGER_CALL
        opened = (self._rec.now(), mode, self._start_timer(function))
        for stale in self._sites.open(site, frame, opened):
            self._release(stale[2])
        return None

    def _on_instruction(self, code: CodeType, offset: int) -> Any:
        """The instruction after a step part's call: that call has returned."""
        try:
            site = self._sites.ending(code, offset)
            if site is None:
                return _monitoring.DISABLE
            function: KeptFunction = site.part
            ended, opened = self._sites.close(site, sys._getframe(1))
            if ended:
                self._finish(function, *opened)
            elif opened is not None:  # another site's call from this frame, which raised
                self._release(opened[2])
            elif function.timed >= TIMED_CALLS or function.claimed:
                return _monitoring.DISABLE
            return None
        except Exception:  # noqa: BLE001 - called inside the script's own lines
            return _monitoring.DISABLE


def install(recorder: Recorder, timer: TimerSource | None = None) -> Uninstall | None:
    """The source: keep the first calls of the user's functions, claimable through
    ``recorder.history``; ``timer``: the GPU timer of the source that installs it, if not
    the recorder's."""
    if recorder.history is not None:
        return None  # installed already, from the start (the CUPTI layer's, for --cupti)
    history = EagerHistory(recorder, timer)
    recorder.history = history
    return history.install()
