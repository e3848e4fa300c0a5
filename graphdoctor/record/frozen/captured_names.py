"""Names around a captured block: the values bound to names in the capturing frame, and the
names the block's source reads, with the first line that reads each.

A ``with torch.cuda.graph(g):`` block is the body of the ``with`` statement on the line where
the capture began; a raw ``g.capture_begin() ... g.capture_end()`` block is the lines from
the one to the other. The source is read with ``ast``, once per file, and only when a
candidate input turns out freed: this is off every hot path. Imports no torch.
"""

from __future__ import annotations

import ast
import ctypes
import functools
import inspect
import linecache
from collections.abc import Iterator
from types import CodeType, FrameType
from typing import Any


def _frame_var() -> Any:
    """CPython's ``PyFrame_GetVar`` (3.12+): one local of a running function, read without
    ``frame.f_locals``, whose snapshot dict (3.12 and older) would keep every local alive
    until the frame ends, and so keep alive the very tensor whose freeing is looked for."""
    get_var = getattr(ctypes.pythonapi, "PyFrame_GetVar", None)
    if get_var is not None:
        get_var.argtypes, get_var.restype = (ctypes.py_object, ctypes.py_object), ctypes.py_object
    return get_var


FRAME_VAR = _frame_var()


def is_number(value: Any) -> bool:
    """A Python number a kernel takes by value (a bool is a flag, not a number)."""
    kind = type(value)
    return kind is int or kind is float


NUMBERS_KEPT = 8  # distinct numbers kept per argument of a user function


def note_numbers(seen: dict[str, list[Any]], code: CodeType, frame: FrameType) -> None:
    """The distinct numbers (at most ``NUMBERS_KEPT``) each argument of ``code``'s was
    given in ``frame``, added to ``seen``: what a graph that froze one is told of."""
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


def bound_values(frame: FrameType) -> Iterator[tuple[str, Any]]:
    """(name, value) for the names ``frame`` can read: its locals (for a function, only where
    they can be read without keeping them alive: Python 3.12+), then its globals."""
    code = frame.f_code
    if not code.co_flags & inspect.CO_OPTIMIZED:  # a module or class body: its own namespace
        namespace = frame.f_locals
        yield from list(namespace.items())
        if namespace is frame.f_globals:
            return
    elif FRAME_VAR is not None:  # never frame.f_locals here: see _frame_var
        for name in (*code.co_varnames, *code.co_cellvars, *code.co_freevars):
            try:
                yield name, FRAME_VAR(frame, name)
            except (NameError, ValueError):  # not bound yet
                continue
    yield from list(frame.f_globals.items())


def value_of(frame: FrameType, name: str) -> Any:
    """What ``name`` holds in ``frame`` now, read as :func:`bound_values` reads it; None if
    unbound or unreadable."""
    try:
        if frame.f_code.co_flags & inspect.CO_OPTIMIZED:
            return FRAME_VAR(frame, name) if FRAME_VAR is not None else None
        return frame.f_locals.get(name, frame.f_globals.get(name))
    except (NameError, ValueError, KeyError):
        return None


_WITH = (ast.With, ast.AsyncWith)


@functools.lru_cache(maxsize=256)
def names_read(path: str, begin_line: int, end_line: int) -> dict[str, int]:
    """{name: first line reading it} for the captured block, for the names it reads from
    before the capture; empty if the source is gone. Worked out once per block (a walk of
    its module's syntax tree: a millisecond for a small script), and read, never changed,
    by its callers."""
    tree = parse_source(path)
    if tree is None:
        return {}
    block = _with_body(tree, begin_line)
    if block is None:
        block = _statements_between(tree, begin_line, max(end_line, begin_line))
    reads: dict[str, int] = {}
    stores: dict[str, int] = {}
    for statement in block:
        for node in ast.walk(statement):
            if isinstance(node, ast.Name):
                seen = reads if isinstance(node.ctx, ast.Load) else stores
                seen[node.id] = min(seen.get(node.id, node.lineno), node.lineno)
    # a name the block binds before it reads it (``out = layer(x)``, then ``f(out)``) reads
    # the block's own tensor, not one from before the capture
    return {name: line for name, line in reads.items() if stores.get(name, line) >= line}


@functools.lru_cache(maxsize=64)
def parse_source(path: str) -> ast.Module | None:
    source = "".join(linecache.getlines(path))
    if not source:
        return None
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def _with_body(tree: ast.Module, line: int) -> list[ast.stmt] | None:
    """The body of the innermost ``with`` whose header holds ``line``."""
    for node in ast.walk(tree):
        if isinstance(node, _WITH) and node.lineno <= line <= _header_end(node):
            return node.body
    return None


def block_end(path: str, begin_line: int) -> int | None:
    """The last line of the ``with`` block whose header holds ``begin_line`` (a
    ``torch.cuda.graph`` capture's); None where there is none or the source is gone."""
    tree = parse_source(path)
    body = _with_body(tree, begin_line) if tree is not None else None
    return (body[-1].end_lineno or body[-1].lineno) if body else None


def _header_end(node: ast.With | ast.AsyncWith) -> int:
    return max((item.context_expr.end_lineno or node.lineno) for item in node.items)


def _statements_between(tree: ast.Module, first: int, last: int) -> list[ast.stmt]:
    """The statements that start within [first, last], definitions left out (their bodies
    do not run there)."""
    return [node for node in ast.walk(tree)
            if isinstance(node, ast.stmt) and not isinstance(node, _DEFINITIONS)
            and first <= node.lineno <= last]


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def bound_again_at(path: str, begin_line: int, end_line: int, name: str) -> int | None:
    """The first line after the captured block, in the function (or module) that holds it,
    that binds ``name`` again (``x = next_batch()``, ``for x in batches:``); None if none
    does or the source is gone. What a replay reading a rebound name is told to change."""
    tree = parse_source(path)
    if tree is None:
        return None
    scope: ast.AST = tree
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                and node.lineno <= begin_line <= (node.end_lineno or node.lineno) \
                and node.lineno >= getattr(scope, "lineno", 0):
            scope = node
    lines = [node.lineno for node in ast.walk(scope)
             if isinstance(node, ast.Name) and node.id == name
             and isinstance(node.ctx, ast.Store) and node.lineno > end_line]
    return min(lines, default=None)


def dotted_name(node: ast.AST, longest: int) -> tuple[str, ...] | None:
    """``("self", "cfg", "scale")`` for ``self.cfg.scale`` (at most ``longest`` attributes
    after the name), ``("pos",)`` for ``pos``; None for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute) and len(parts) < longest:
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return (node.id, *reversed(parts))
