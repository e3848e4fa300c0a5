"""The Python numbers a manual capture's own code hands to torch, and the names they came from.

A kernel takes its scalar arguments by value: ``x * scale``, ``k_cache[:, pos] = k``,
``out.fill_(v)`` and ``y.clamp(min=lo)`` each freeze the number they were given into the
graph, and a replay uses it whatever the name holds by then. While a manual capture runs
(only then), a torch function mode sees each call of torch made from Python. For a call the
user's own code makes with a Python number among its arguments, the names on that line whose
values equal the number are bound (``pos``, ``self.scale``); where such a name is an argument
of the user's function, the names on its caller's line that passed the same value are bound
too, up to the frame that holds the capture. Calls made inside libraries are left alone: their
numbers are their own settings, and a loop index in the user's line that happens to equal
one would be a false lead. Each line's source is parsed once, with ``ast``.

Never pushed where torch.compile has compiled something already: the mode stack is part of
what dynamo guards, and a recompilation inside a capture would break it.
"""

from __future__ import annotations

import ast
import functools
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import CodeType, FrameType
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from graphdoctor.record.frozen.captured_names import FRAME_VAR, dotted_name, is_number, parse_source
from graphdoctor.record.recorder import Recorder
from graphdoctor.record.stacks import qualname
from graphdoctor.trace.model import PYTHON, TORCH, USER
from graphdoctor.trace.names import HELD_BY_ARGUMENT, HELD_BY_ATTRIBUTE, HELD_BY_VARIABLE

MAX_BINDINGS = 256  # per capture: a block that binds more is not the user's own loop
_CHAIN = 3  # the longest attribute chain followed: self.cfg.scale


@dataclass(frozen=True)
class Binding:
    """A name whose value a captured call took: where it lives and how to read it again."""

    name: str  # as the source writes it: pos, self.scale
    held_by: str  # HELD_BY_VARIABLE, HELD_BY_ARGUMENT or HELD_BY_ATTRIBUTE
    owner: str  # the function, module or class it belongs to
    value: Any
    code: CodeType  # the frame's code that reads it
    site: FrameType  # the user's frame whose line passed it on
    module_level: bool  # a name of a module's namespace (its globals)
    in_capture_frame: bool  # a local of the frame holding the capture, still running after it
    namespace: Any  # for a module-level name, its dict; for an attribute, the object


def dynamo_has_compiled() -> bool:
    utils = sys.modules.get("torch._dynamo.utils")
    counters = getattr(utils, "counters", None)
    return bool(counters and counters.get("frames", {}).get("ok", 0))


class ScalarUses(TorchFunctionMode):
    """Pushed at a manual capture's begin, popped at its end; ``found`` gets each binding."""

    def __init__(self, recorder: Recorder, capture_frame: FrameType | None,
                 found: Callable[[Binding], None],
                 reads: Callable[[FrameType], None] | None = None):
        """``reads``, where given, gets each frame of the script's that calls torch (the
        values it read to choose what ran: :mod:`graphdoctor.record.frozen.host_reads`)."""
        super().__init__()
        self._rec = recorder
        recorder.transparent.add(ScalarUses.__torch_function__.__code__)
        # the capturing frame by its id, never the frame itself: a mode left on torch's stack
        # (the script pushed one of its own inside the capture) would keep its locals alive
        self._top = id(capture_frame) if capture_frame is not None else 0
        self._found = found
        self._reads = reads
        self._seen: set[tuple[CodeType, int, tuple[str, ...]]] = set()
        self.active = True

    def __torch_function__(self, func: Any, types: Any, args: Any = (),
                           kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if self.active:
            numbers = _numbers(args, kwargs)
            if numbers or self._reads is not None:
                self._noted(numbers, sys._getframe(1))
        return func(*args, **kwargs)

    def _noted(self, numbers: list[Any], frame: FrameType) -> None:
        try:
            caller = self._direct_caller(frame)
            if caller is not None and numbers:
                self._bind(caller, numbers)
            if caller is not None and self._reads is not None:
                self._reads(caller)
        except Exception:  # noqa: BLE001 - never the script's problem
            self.active = False

    def _direct_caller(self, frame: FrameType | None) -> FrameType | None:
        """The frame that called torch, past torch's own wrappers, if it is the user's."""
        kind = self._rec.stacks.kind
        while frame is not None and kind(frame.f_code.co_filename) in (TORCH, PYTHON):
            frame = frame.f_back
        if frame is None or kind(frame.f_code.co_filename) != USER:
            return None
        return frame

    def _bind(self, frame: FrameType, values: list[Any]) -> None:
        """Bind the names on ``frame``'s line whose value is among ``values``; follow an
        argument to the line of the caller that passed it."""
        for chain in names_on_line(frame.f_code.co_filename, frame.f_lineno or 0):
            key = (frame.f_code, frame.f_lineno or 0, chain)
            if key in self._seen or len(self._seen) >= MAX_BINDINGS:
                continue
            found = read(frame, chain)
            if found is None or not is_number(found[0]) or found[0] not in values:
                continue
            self._seen.add(key)
            binding = _binding(frame, chain, *found, id(frame) == self._top)
            self._found(binding)
            if binding.held_by == HELD_BY_ARGUMENT and id(frame) != self._top:
                caller = self._caller(frame)
                if caller is not None:
                    self._bind(caller, [binding.value])

    def _caller(self, frame: FrameType) -> FrameType | None:
        caller = frame.f_back
        while caller is not None and not self._rec.stacks.is_user_code(caller.f_code):
            caller = caller.f_back
        return caller

    def start(self) -> None:
        enter: Callable[[], Any] = self.__enter__  # untyped in torch
        enter()

    def stop(self) -> None:
        """Pop the mode if it is on top of the stack; else leave it on, doing nothing (the
        script pushed a mode of its own inside the capture and has not popped it yet)."""
        self.active = False
        length = torch._C._len_torch_function_stack()
        if length and torch._C._get_function_stack_at(length - 1) is self:
            torch._C._pop_torch_function_stack()


def _numbers(args: Any, kwargs: dict[str, Any]) -> list[Any]:
    found: list[Any] = []
    for value in (*args, *kwargs.values()):
        _collect(value, found, 0)
    return found


def _collect(value: Any, found: list[Any], depth: int) -> None:
    kind = type(value)
    if kind is int or kind is float:
        found.append(value)
    elif kind is slice:
        found.extend(v for v in (value.start, value.stop, value.step) if is_number(v))
    elif (kind is tuple or kind is list) and depth == 0 and len(value) <= 8:
        for item in value:
            _collect(item, found, 1)


def _binding(frame: FrameType, chain: tuple[str, ...], value: Any, where: str,
             holder: Any, in_capture_frame: bool) -> Binding:
    code = frame.f_code
    module_level = where == "global" or not code.co_flags & 0x1  # CO_OPTIMIZED
    if len(chain) > 1:
        held_by, owner = HELD_BY_ATTRIBUTE, type(holder).__name__
    elif where == "local" and chain[0] in _arguments(code):
        held_by, owner = HELD_BY_ARGUMENT, qualname(code)
    else:
        held_by = HELD_BY_VARIABLE
        owner = qualname(code) if not module_level else code.co_filename.rsplit("/", 1)[-1]
    namespace = holder if len(chain) > 1 else (frame.f_globals if where == "global"
                                               else frame.f_locals if module_level else None)
    return Binding(".".join(chain), held_by, owner, value, code, frame, module_level,
                   in_capture_frame, namespace)


def _arguments(code: CodeType) -> tuple[str, ...]:
    count = code.co_argcount + code.co_kwonlyargcount
    return code.co_varnames[:count]


def read(frame: FrameType, chain: tuple[str, ...]) -> tuple[Any, str, Any] | None:
    """(value, "local" or "global", the object holding the last attribute) of a dotted name
    in ``frame``; None where it cannot be read without running the script's code (a
    property, a ``__getattr__``) or keeping a function's locals alive (Python before 3.12)."""
    head = _name(frame, chain[0])
    if head is None:
        return None
    value, where = head
    holder = None
    for attr in chain[1:]:
        holder = value
        attributes = getattr(value, "__dict__", None)
        if not isinstance(attributes, dict) or attr not in attributes:
            return None
        value = attributes[attr]
    return value, where, holder


_MISSING = object()


def _name(frame: FrameType, name: str) -> tuple[Any, str] | None:
    code = frame.f_code
    if not code.co_flags & 0x1:  # a module or class body: its own namespace
        value = frame.f_locals.get(name, _MISSING)
        if value is not _MISSING:
            return value, "local"
    elif name in code.co_varnames or name in code.co_cellvars or name in code.co_freevars:
        if FRAME_VAR is None:
            return None
        try:
            return FRAME_VAR(frame, name), "local"
        except (NameError, ValueError):
            return None
    value = frame.f_globals.get(name, _MISSING)
    return None if value is _MISSING else (value, "global")


@functools.lru_cache(maxsize=4096)
def names_on_line(path: str, line: int) -> tuple[tuple[str, ...], ...]:
    """The names and attribute chains (``("self", "scale")``) the statement at ``line``
    reads: for a compound statement, its header only."""
    tree = parse_source(path)
    statement = _statement_at(tree, line) if tree is not None else None
    if statement is None:
        return ()
    chains: dict[tuple[str, ...], None] = {}
    for node in _header(statement):
        for sub in ast.walk(node):
            chain = _chain(sub)
            if chain is not None:
                chains[chain] = None
    return tuple(chains)


def _statement_at(tree: ast.Module, line: int) -> ast.stmt | None:
    best: ast.stmt | None = None
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and node.lineno <= line <= (node.end_lineno or 0):
            if best is None or node.lineno >= best.lineno:
                best = node
    return best


def _header(statement: ast.stmt) -> Iterator[ast.AST]:
    if isinstance(statement, (ast.If, ast.While)):
        yield statement.test
    elif isinstance(statement, (ast.For, ast.AsyncFor)):
        yield statement.iter
    elif isinstance(statement, (ast.With, ast.AsyncWith)):
        yield from (item.context_expr for item in statement.items)
    elif not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                    ast.Try)):
        yield statement


def _chain(node: ast.AST) -> tuple[str, ...] | None:
    """``pos`` or ``self.cfg.scale`` as read (not written) by the line, else None."""
    if not isinstance(node, ast.Name | ast.Attribute) or not isinstance(node.ctx, ast.Load):
        return None
    return dotted_name(node, _CHAIN)
