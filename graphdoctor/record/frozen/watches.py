"""One piece of host state a graph froze, watched: what the capture saw, how to read it again
without holding the script's objects alive, and how to show it.

A watch reads its value through weak references (an object, a module), a module's namespace
(its globals) or the capturing function's running frame, found again from the frame that
asks (never kept). A value that cannot be read any more reads as :data:`GONE` and is left
alone. Shared by the frozen values (:mod:`graphdoctor.record.frozen.frozen_values`), the modules a
capture ran (:mod:`graphdoctor.record.frozen.host_state`) and the values its code read to choose a
tensor or a branch (:mod:`graphdoctor.record.frozen.host_reads`).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass
from types import CodeType, FrameType
from typing import Any

import torch

from graphdoctor.record.frozen.captured_names import FRAME_VAR
from graphdoctor.trace.event_kinds import tensor_value
from graphdoctor.trace.names import USE_BY_VALUE

GONE = object()  # a value that cannot be read any more (its optimizer or object is gone)
Reader = Callable[[FrameType | None], Any]
Shown = Callable[[Any], str]
# What changes a watched value in the source (graphdoctor.record.frozen.source_assignments):
# ("name", "pos"), ("attribute", "scale"), ("key", "lr") or ("call", "eval")
Target = tuple[str, str]


@dataclass
class Watch:
    graph: int
    name: str
    held_by: str
    owner: str
    captured: Any
    read: Reader
    site: int  # stack of the captured use
    place: tuple[str, int] = ("", 0)  # the user's file and line of the captured use
    tensor_fix: bool = False
    optimizer: int = 0  # id() of the optimizer it belongs to
    use: str = USE_BY_VALUE
    show: Shown | None = None  # how its values are written, where repr() would not do
    targets: tuple[Target, ...] = ()  # what changes it in the source, where not its name
    last: Any = None
    changes: int = 0
    checked_at: int = 0  # the graph's replays when it was last found unchanged

    def __post_init__(self) -> None:
        self.last = self.captured

    def shown(self, value: Any) -> str:
        return self.show(value) if self.show is not None else shown(value)


def same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return False  # a number moved into a tensor: never compared (that would wait for it)
    try:
        return bool(a == b) or (a != a and b != b)  # NaN is NaN still
    except (RuntimeError, TypeError, ValueError):  # a tensor now: not the number captured
        return False


def shown(value: Any) -> str:
    if isinstance(value, torch.Tensor):  # never .item(): that would sync
        return tensor_value(value.dtype, value.device)
    return repr(value)[:80]


def never(frame: FrameType | None) -> Any:
    return GONE


# -- reading a dotted name again ----------------------------------------------------------
def attributes(obj: Any, names: tuple[str, ...]) -> Any:
    """``obj.a.b`` read through each object's ``__dict__`` (never a property, a
    ``__getattr__`` or anything else of the script's that would run); GONE where one is
    missing."""
    for name in names:
        found = getattr(obj, "__dict__", None)
        if not isinstance(found, dict) or name not in found:
            return GONE
        obj = found[name]
    return obj


def object_reader(head: Any, rest: tuple[str, ...]) -> Reader | None:
    """``head.rest...`` later, through a weak reference to ``head``; None where ``head``
    takes none (then it cannot be watched without keeping it alive)."""
    try:
        ref = weakref.ref(head)
    except TypeError:
        return None

    def read(frame: FrameType | None) -> Any:
        obj = ref()
        return GONE if obj is None else attributes(obj, rest)

    return read


def namespace_reader(namespace: dict[str, Any], chain: tuple[str, ...]) -> Reader:
    """``chain`` in a module's namespace (its globals, or a script's top level)."""
    def read(frame: FrameType | None) -> Any:
        value = namespace.get(chain[0], GONE)
        return value if value is GONE else attributes(value, chain[1:])

    return read


def local_reader(code: CodeType, chain: tuple[str, ...]) -> Reader:
    """``chain`` in the running call of ``code`` found on the asking thread's stack: the
    capturing function's local, read again at a replay it makes (never at the end)."""
    def read(frame: FrameType | None) -> Any:
        value = local(code, chain[0], frame)
        return value if value is GONE else attributes(value, chain[1:])

    return read


def local(code: CodeType, name: str, frame: FrameType | None) -> Any:
    """The local ``name`` of the running call of ``code`` on the replaying thread's stack."""
    while frame is not None and frame.f_code is not code:
        frame = frame.f_back
    if frame is None or FRAME_VAR is None:
        return GONE
    try:
        return FRAME_VAR(frame, name)
    except (NameError, ValueError):
        return GONE
