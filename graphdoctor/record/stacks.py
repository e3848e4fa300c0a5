"""Python stacks, taken cheaply and stored once.

A stack is interned by its (code, line) pairs, so a call site that syncs a million times
costs one dictionary lookup after the first. Frames are classified by where their file
lives: the user's code, a library, torch (and its compilers), or Python itself. graphdoctor's
own frames are left out: a user reading a stack should see their program, not the recorder.
"""

from __future__ import annotations

import os
import sys
import sysconfig
import threading
from collections.abc import Callable
from types import CodeType, FrameType
from typing import Any

from graphdoctor.facts.queries import CULPRIT_KINDS
from graphdoctor.own_code import is_own_file
from graphdoctor.trace.frames import classify_path
from graphdoctor.trace.model import LIBRARY, PYTHON, TORCH, USER
from graphdoctor.trace.spool import records as sr
from graphdoctor.trace.spool.records import SpoolRecord

_STDLIB_DIRS = tuple(
    os.path.realpath(p) + os.sep
    for p in {sysconfig.get_paths().get("stdlib", ""), sysconfig.get_paths().get("platstdlib", "")}
    if p
)


def classify_file(filename: str) -> str | None:
    """USER, LIBRARY, TORCH or PYTHON; None for graphdoctor's own frames."""
    if filename.startswith("<"):
        return PYTHON
    path = os.path.realpath(filename)
    if is_own_file(path):
        return None
    kind = classify_path(path)
    if kind == USER and path.startswith(_STDLIB_DIRS):
        return PYTHON
    return kind


_RUNPY_FILES = frozenset({"<frozen runpy>", getattr(__import__("runpy"), "__file__", "runpy.py")})


def qualname(code: CodeType) -> str:
    """A code object's qualified name (``Model.forward``); its plain name before 3.11."""
    return str(getattr(code, "co_qualname", code.co_name))


def _describe_code(key: tuple[CodeType, int]) -> tuple[str, int, str]:
    code, line = key
    return (code.co_filename, line or 0, qualname(code))


def _describe_named(key: tuple[str, int, str]) -> tuple[str, int, str]:
    return key


class StackTable:
    """Interns frames and stacks and emits their definitions once through ``emit``."""

    def __init__(self, emit: Callable[[SpoolRecord], None], limit: int = 48):
        self._emit = emit
        self._limit = limit
        # keys: (code, line) pairs for live frames, (file, line, function) for named ones
        self._stacks: dict[tuple[Any, ...], int] = {}
        self._frames: dict[Any, int] = {}
        self._kinds: dict[str, str | None] = {}
        self._lock = threading.Lock()

    def capture(self, skip: int = 1) -> int:
        """The id of the calling thread's stack, ``skip`` frames above this call."""
        try:
            frame: FrameType | None = sys._getframe(skip + 1)
        except ValueError:
            return -1
        return self.from_frame(frame)

    def from_frame(self, frame: FrameType | None, line: int = 0) -> int:
        """The stack from ``frame`` out; ``line``, where given, is the innermost frame's line
        instead of the one it is on (a line of its function that ran before this one)."""
        key: list[tuple[CodeType, int]] = []
        while frame is not None and len(key) < self._limit:
            if frame.f_code.co_filename in _RUNPY_FILES:
                break  # above this lies graphdoctor's runner, not the user's program
            key.append((frame.f_code, line or frame.f_lineno))
            frame, line = frame.f_back, 0
        return self._intern(tuple(key), _describe_code)

    def from_traceback(self, tb: Any) -> int:
        """The stack of an exception: its frames up to where it was raised."""
        if tb is None:
            return -1
        outer: list[tuple[CodeType, int]] = []
        frame = tb.tb_frame.f_back  # the callers of the frame that caught it, still live
        while frame is not None and len(outer) < self._limit:
            if frame.f_code.co_filename in _RUNPY_FILES:
                break
            outer.append((frame.f_code, frame.f_lineno))
            frame = frame.f_back
        inner = []
        while tb is not None:
            inner.append((tb.tb_frame.f_code, tb.tb_lineno))
            tb = tb.tb_next
        # innermost first, like from_frame
        key = tuple(list(reversed(inner))[: self._limit] + outer)[: self._limit * 2]
        return self._intern(key, _describe_code)

    def from_named(self, frames: list[tuple[str, int, str]]) -> int:
        """A stack given as (file, line, function) triples, innermost first."""
        return self._intern(tuple(frames[: self._limit]), _describe_named)

    def _intern(self, key: tuple[Any, ...],
                describe: Callable[[Any], tuple[str, int, str]]) -> int:
        """The id of a stack given innermost first, as frame keys that ``describe`` turns
        into (file, line, function). Ids are handed out under a lock: any thread may ask."""
        stack_id = self._stacks.get(key)
        if stack_id is not None:
            return stack_id
        with self._lock:
            stack_id = self._stacks.get(key)
            if stack_id is None:
                ids = [f for f in (self._frame_id(k, describe) for k in reversed(key))
                       if f is not None]
                stack_id = self._stacks[key] = len(self._stacks)
                self._emit(sr.StackRecord(stack_id, ids))
        return stack_id

    def _frame_id(self, key: Any, describe: Callable[[Any], tuple[str, int, str]]) -> int | None:
        frame_id = self._frames.get(key)
        if frame_id is None:
            file, line, name = describe(key)
            kind = self.kind(file)
            if kind is None:
                return None
            frame_id = self._frames[key] = len(self._frames)
            self._emit(sr.FrameRecord(frame_id, file, line, name, kind))
        return frame_id

    def kind(self, filename: str) -> str | None:
        if filename not in self._kinds:
            self._kinds[filename] = classify_file(filename)
        return self._kinds[filename]

    def is_user_code(self, code: CodeType) -> bool:
        return self.kind(code.co_filename) in CULPRIT_KINDS


__all__ = ["StackTable", "classify_file", "qualname", "USER", "LIBRARY", "TORCH", "PYTHON"]
