"""Eager calls from before anyone asked: a flight recorder of the user's own functions.

A capture names the code it ran only when it happens, and torch.compile learns of a function
only when it first runs it; real scripts run that code eagerly before both (the recipe's
warmup steps, a decode loop run plainly before it is compiled). So from the start of the
run, calls of functions in the user's own code are timed, host time and GPU time from a
pair of CUDA events, up to ``TIMED_CALLS`` per function, and the latest ``KEPT`` of them
are kept in memory: the first calls of a process run cold (caches, clocks), so the latest
ones are what a replay is fairly compared with. When a capture, ``make_graphed_callables``
or torch.compile names one of them, its kept calls become its eager calls in the trace
(:meth:`EagerHistory.claim`); a first call among them is left out as cold.

Cost: ``sys.monitoring`` calls back on each function's first start; torch's and other
libraries' code is switched off right there (``DISABLE``), and so is a user function once it
has had ``TIMED_CALLS`` calls or is claimed (then the eager-call timer follows it). A long
run pays for the first calls of each of its own functions, and for nothing after.
"""

from __future__ import annotations

import inspect
import threading
from collections import deque
from dataclasses import dataclass, field
from types import CodeType
from typing import Any

from graphdoctor.record.calls import SYS_MONITORING as _monitoring
from graphdoctor.record.calls import Monitor, monitoring_available
from graphdoctor.record.recorder import Recorder, TimerToken, Uninstall
from graphdoctor.trace import spool_records as sr
from graphdoctor.trace.names import EAGER_CALL, WARMUP_CALL

TIMED_CALLS = 256  # per function, from its first; then it costs nothing more
KEPT = 32  # the latest timed calls of a function, what medians are taken from
MAX_TIMED = 4096  # CUDA event pairs held for calls nobody has claimed yet
_NOT_PLAIN_CALLS = (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ITERABLE_COROUTINE
                    | inspect.CO_ASYNC_GENERATOR)  # their PY_START/PY_RETURN are not one call


@dataclass
class _Call:
    t0: int
    dur: int
    mode: str
    token: TimerToken | None


@dataclass
class _Function:
    calls: deque[_Call] = field(default_factory=lambda: deque(maxlen=KEPT))
    timed: int = 0  # calls timed so far, kept or not
    open: dict[int, list[tuple[int, str, TimerToken | None]]] = field(default_factory=dict)


class EagerHistory:
    """Keeps the first calls of each user function until something claims them."""

    def __init__(self, recorder: Recorder):
        self._rec = recorder
        self._monitor = Monitor(on_lost=self._lost)
        self._functions: dict[CodeType, _Function] = {}
        self._places: dict[tuple[str, int, str], CodeType] = {}  # where each is defined
        self._claimed: set[CodeType] = set()
        self._timed = 0

    def install(self) -> Uninstall | None:
        if not monitoring_available() or not self._rec.config.eager_calls:
            return None
        events = _monitoring.events
        if not self._monitor.claim({events.PY_START: self._on_start,
                                    events.PY_RETURN: self._on_return}):
            self._rec.note("eager calls before a capture", "no sys.monitoring tool id was free")
            return None
        self._monitor.set_global(events.PY_START | events.PY_RETURN)
        return self._monitor.release

    def _lost(self) -> None:
        self._rec.note("eager calls before a capture", "the script took every free "
                       "sys.monitoring tool id, so their timing stopped")

    def claim(self, code: CodeType, fn: int) -> None:
        """``code`` is function ``fn`` now: its kept calls go to the spool as its eager
        calls, the cold first one left out, and it is no longer kept here."""
        self._claimed.add(code)
        original = self._places.get(_place(code), code)  # torch.compile runs a rebuilt code
        self._claimed.add(original)
        kept = self._functions.pop(original, None)
        if kept is None:
            return
        calls = list(kept.calls)[1:] if kept.timed <= KEPT else list(kept.calls)
        for call in calls:  # without the cold first call, if it is among them
            self._emit(call, fn)

    def _emit(self, call: _Call, fn: int) -> None:
        row = sr.CallRecord(call.t0, call.dur, -1, fn, call.mode, -1)
        timer = self._rec.timer
        if call.token is None or timer is None:
            self._rec.emit(row)
        else:
            timer.settle(call.token, row)

    def _on_start(self, code: CodeType, offset: int) -> Any:
        function = self._functions.get(code)
        if function is None:
            if not self._keeps(code):
                return _monitoring.DISABLE
            function = self._functions[code] = _Function()
            self._places[_place(code)] = code
        if function.timed >= TIMED_CALLS or code in self._claimed:
            return _monitoring.DISABLE
        if self._rec.capturing_anywhere or not self._rec.enabled:
            return None
        mode = WARMUP_CALL if self._rec.in_warmup else EAGER_CALL
        function.open.setdefault(threading.get_ident(), []).append(
            (self._rec.now(), mode, self._start_timer()))
        return None

    def _keeps(self, code: CodeType) -> bool:
        """A plain function of the user's, not yet claimed, and not a rebuilt copy of one
        kept already (the code torch.compile runs in place of the function's own)."""
        return (code not in self._claimed and not code.co_flags & _NOT_PLAIN_CALLS
                and self._places.get(_place(code), code) is code
                and self._rec.stacks.is_user_code(code))

    def _start_timer(self) -> TimerToken | None:
        timer = self._rec.timer
        if timer is None or self._timed >= MAX_TIMED:
            return None
        token = timer.start()
        self._timed += token is not None
        return token

    def _on_return(self, code: CodeType, offset: int, retval: Any) -> Any:
        function = self._functions.get(code)
        if function is None:  # not the user's, or claimed: the eager-call timer has it
            return _monitoring.DISABLE
        opened = function.open.get(threading.get_ident())
        if not opened:
            return _monitoring.DISABLE if function.timed >= TIMED_CALLS else None
        t0, mode, token = opened.pop()
        timer = self._rec.timer
        if token is not None and timer is not None:
            timer.end(token)
        function.calls.append(_Call(t0, self._rec.now() - t0, mode, token))
        function.timed += 1
        return None


def _place(code: CodeType) -> tuple[str, int, str]:
    return (code.co_filename, code.co_firstlineno, code.co_name)


def install(recorder: Recorder) -> Uninstall | None:
    """The source: keep the first calls of the user's functions, claimable through
    ``recorder.history``."""
    history = EagerHistory(recorder)
    recorder.history = history
    return history.install()
