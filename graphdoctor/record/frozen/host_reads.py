"""The Python values a manual capture's own code read to choose what the graph holds: the key
that picked a tensor (``self.outs[self.slot]``: every replay writes the buffer picked at
capture), the test of an ``if`` it passed (``if self.calibrate:``: every replay runs the
branch taken at capture), a flag handed to torch (``training=self.drop``).

While a manual capture runs, the function mode that binds numbers
(:mod:`graphdoctor.record.frozen.scalar_uses`) hands over each of the script's frames that calls
torch. For each line of the script's own code met for the first time, the source up to that
line is read (:mod:`graphdoctor.record.frozen.captured_reads`), and each value read is bound to
where it lives: a module's variable, the capturing function's local, an attribute of an
object held by a weak reference, or, for an argument of the script's function, the names on
its caller's line that passed it. What cannot be read again without keeping something alive
or running the script's code is left alone. The watches are compared where the numbers are
(:mod:`graphdoctor.record.frozen.frozen_values`): at the replays already sampled, and at the end.

Out of reach: reads in libraries' code (their settings are their own), a value computed into
a local of a function the capture called (``slot = self.i % 2``, then ``bufs[slot]``), and,
before Python 3.12, anything read through a function's locals (the capturing function's
module-level names and objects still are).
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass
from types import CodeType, FrameType
from typing import Any

import torch

from graphdoctor.record.frozen import scalar_uses
from graphdoctor.record.frozen.captured_names import block_end, value_of
from graphdoctor.record.frozen.captured_reads import (
    PLAIN,
    Chain,
    Read,
    Unsafe,
    evaluate,
    item,
    reads_before,
)
from graphdoctor.record.frozen.watches import (
    GONE,
    Reader,
    Target,
    Watch,
    local_reader,
    namespace_reader,
    object_reader,
)
from graphdoctor.record.recorder import Recorder
from graphdoctor.record.stacks import qualname
from graphdoctor.trace.model import USER
from graphdoctor.trace.names import (
    HELD_BY_ARGUMENT,
    HELD_BY_ATTRIBUTE,
    HELD_BY_VARIABLE,
    USE_INDEX,
)

MAX_LINES = 512  # the script's lines read per capture
MAX_WATCHES = 128  # values watched per capture
MAX_FOLLOWED = 4  # callers an argument is followed through
MAX_DEPTH = 64  # frames walked from a call of torch towards the capturing one
TRAINING = "training"  # a module's mode: watched with the module (host_state)


@dataclass(frozen=True)
class _Bound:
    """Where a name read in the capture lives, and how to read it again."""

    reader: Reader
    value: Any
    held_by: str
    owner: str
    target: Target


class HostReads:
    """One manual capture's reads; ``add`` gets each watch."""

    def __init__(self, recorder: Recorder, graph: int, top: FrameType | None,
                 add: Callable[[Watch], None]):
        self._rec, self._graph, self._add = recorder, graph, add
        # the capturing frame's code and line, never the frame: none is kept past its call
        self._top = top.f_code if top is not None else None
        self._begin = top.f_lineno or 0 if top is not None else 0
        self._lines: set[tuple[CodeType, int]] = set()
        self._tried: set[tuple[str, int, str]] = set()
        self._failed = False

    def called_from(self, frame: FrameType | None) -> None:
        """``frame``, a frame of the script's that called torch, and the script's frames
        that called it up to the capture's: the reads of each line met for the first time.
        One that fails stops the reads only (the numbers are still bound)."""
        if self._failed:
            return
        try:
            self._called_from(frame)
        except Exception as error:  # noqa: BLE001 - never the script's problem
            self._failed = True
            self._rec.note("values read in captured code", f"stopped: {error!r}")

    def _called_from(self, frame: FrameType | None) -> None:
        kind = self._rec.stacks.kind
        for _ in range(MAX_DEPTH):
            if frame is None or len(self._lines) >= MAX_LINES:
                return
            code = frame.f_code
            if kind(code.co_filename) == USER:
                key = (code, frame.f_lineno or 0)
                if key in self._lines:
                    return  # its callers were read with it
                self._lines.add(key)
                self._read_line(frame)
            if code is self._top:
                return
            frame = frame.f_back

    def block_ended(self) -> None:
        """The capture ends: the rest of its own block (an ``if`` after its last call of
        torch, whose branch ran no torch), read in the capturing frame, found on the stack."""
        frame: FrameType | None = sys._getframe(1)
        while frame is not None and frame.f_code is not self._top:
            frame = frame.f_back
        if frame is not None and not self._failed:
            end = block_end(frame.f_code.co_filename, self._begin) or frame.f_lineno or 0
            try:
                self._read_line(frame, end)
            except Exception as error:  # noqa: BLE001 - never the script's problem
                self._failed = True
                self._rec.note("values read in captured code", f"stopped: {error!r}")

    def _read_line(self, frame: FrameType, line: int = 0) -> None:
        code = frame.f_code
        first = 0 if code.co_name == "<module>" else code.co_firstlineno
        top = code is self._top
        for read in reads_before(code.co_filename, first, code.co_name,
                                 line or frame.f_lineno or 0, not top):
            if top and read.line < self._begin:
                continue  # the capturing function's code before the capture: not captured
            key = (code.co_filename, read.line, read.text)
            if key in self._tried or len(self._tried) >= MAX_WATCHES:
                continue
            self._tried.add(key)
            watch = self._watch(frame, read)
            if watch is not None:
                self._add(watch)

    def _watch(self, frame: FrameType, read: Read) -> Watch | None:
        if read.flag and type(_value(frame, read.chains[0])) is not bool:
            return None  # a tensor or a number handed to a call, not a flag
        bound: dict[Chain, _Bound] = {}
        for chain in read.chains:
            found = self._bind(frame, chain, 0)
            if found is None or _module_mode(frame, chain):
                return None
            bound[chain] = found
        captured = _chosen(read, {chain: b.value for chain, b in bound.items()}, frame)
        if captured is GONE:
            return None
        first = bound[read.chains[0]]
        return Watch(self._graph, read.text, first.held_by, first.owner, captured,
                     _reader(read, bound), self._rec.stacks.from_frame(frame, read.line),
                     (frame.f_code.co_filename, read.line), use=read.use,
                     targets=(first.target,))

    def _bind(self, frame: FrameType, chain: Chain, followed: int) -> _Bound | None:
        found = scalar_uses.read(frame, chain)
        if found is None:
            return None
        value, where, holder = found
        code = frame.f_code
        owner = type(holder).__name__ if len(chain) > 1 else qualname(code)
        target: Target = ("attribute", chain[-1]) if len(chain) > 1 else ("name", chain[0])
        held_by = HELD_BY_ATTRIBUTE if len(chain) > 1 else HELD_BY_VARIABLE
        if where == "global" or not code.co_flags & inspect.CO_OPTIMIZED:
            namespace = frame.f_globals if where == "global" else frame.f_locals
            owner = owner if len(chain) > 1 else code.co_filename.rsplit("/", 1)[-1]
            return _Bound(namespace_reader(namespace, chain), value, held_by, owner, target)
        if code is self._top:
            return _Bound(local_reader(code, chain), value, held_by, owner, target)
        if len(chain) > 1:
            reader = object_reader(value_of(frame, chain[0]), chain[1:])
            return _Bound(reader, value, held_by, owner, target) if reader else None
        if chain[0] in _arguments(code) and followed < MAX_FOLLOWED:
            passed = self._passed(frame, value, followed)
            if passed is not None:
                return _Bound(passed.reader, value, HELD_BY_ARGUMENT, qualname(code),
                              passed.target)
        return None  # a local the function computed: gone with its call

    def _passed(self, frame: FrameType, value: Any, followed: int) -> _Bound | None:
        """The name on the caller's line that passed ``value`` to ``frame``'s function."""
        caller = frame.f_back
        while caller is not None and self._rec.stacks.kind(caller.f_code.co_filename) != USER:
            caller = caller.f_back
        if caller is None:
            return None
        if type(value) not in PLAIN:
            return None
        for chain in scalar_uses.names_on_line(caller.f_code.co_filename, caller.f_lineno or 0):
            if type(_value(caller, chain)) is type(value) and _value(caller, chain) == value:
                return self._bind(caller, chain, followed + 1)
        return None


def _value(frame: FrameType, chain: Chain) -> Any:
    """What ``chain`` holds in ``frame`` (read without running the script's code), or GONE."""
    found = scalar_uses.read(frame, chain)
    return GONE if found is None else found[0]


def _arguments(code: CodeType) -> tuple[str, ...]:
    return code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]


def _module_mode(frame: FrameType, chain: Chain) -> bool:
    """``self.training`` of a module: its mode, watched with the module itself."""
    if chain[-1] != TRAINING or len(chain) < 2:
        return False
    found = scalar_uses.read(frame, chain)
    return found is not None and isinstance(found[2], torch.nn.Module)


def _chosen(read: Read, values: dict[Chain, Any], frame: FrameType) -> Any:
    """What the read chose at capture: the key of an index that picked a tensor or a
    module, the truth of a test, a flag's bool; GONE where it chose nothing watchable."""
    try:
        value = evaluate(read.expr, values.__getitem__)
    except Unsafe:
        return GONE
    if read.use == USE_INDEX:
        container = scalar_uses.read(frame, read.container)
        picked = _element(container[0], value) if container is not None else None
        return value if isinstance(picked, (torch.Tensor, torch.nn.Module)) else GONE
    if read.flag:
        return value if type(value) is bool else GONE
    return bool(value)


def _element(container: Any, key: Any) -> Any:
    """``container[key]`` for a plain list, tuple or dict, or a torch module list or dict
    (read from its own dict of modules), without running the script's code; None if none."""
    try:
        if isinstance(container, (torch.nn.ModuleList, torch.nn.ModuleDict)):
            index = key if isinstance(container, torch.nn.ModuleDict) else str(key)
            return container.__dict__["_modules"].get(index)
        return item(container, key)
    except (IndexError, KeyError, TypeError, Unsafe):
        return None


def _reader(read: Read, bound: dict[Chain, _Bound]) -> Reader:
    readers = {chain: b.reader for chain, b in bound.items()}

    def again(frame: FrameType | None) -> Any:
        values = {chain: reader(frame) for chain, reader in readers.items()}
        if any(value is GONE for value in values.values()):
            return GONE
        try:
            value = evaluate(read.expr, values.__getitem__)
        except Unsafe:
            return GONE
        return value if read.use == USE_INDEX or read.flag else bool(value)

    return again
