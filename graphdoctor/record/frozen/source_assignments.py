"""The line of the user's source that assigns a value a graph froze: for a change seen at a
replay, after the line that made it had run.

A name (``pos``, ``scale``) is assigned by ``pos = ...``, ``pos += 1`` or a ``for pos in``;
an attribute (``self.scale``) by an assignment to ``<anything>.scale``; an optimizer's
setting (``param_groups[0]['lr']``) by a subscript assignment with that key
(``group["lr"] = ...``); a module's state by a call (``model.eval()``,
``p.requires_grad_(False)``, ``m.register_forward_hook(...)``), where the watch says so.
The files searched are the one where the graph took the value and those of the user's
frames on the replaying stack; of the assignments found, the first after the graph's own
line is named (a loop's update follows the capture), else the first.
Read with ``ast`` once per file, and only when a change is seen. Imports no torch.
"""

from __future__ import annotations

import ast
import functools
import re
from types import FrameType

from graphdoctor.record.frozen.captured_names import parse_source
from graphdoctor.record.recorder import Recorder
from graphdoctor.trace.names import HELD_BY_OPTIMIZER

_KEY = re.compile(r"\['([^']+)'\]$")  # the key of "param_groups[0]['lr']"
Place = tuple[str, int, str]  # file, line, function
_DEPTH = 16  # user frames of the replaying stack whose files are searched


def find(recorder: Recorder, name: str, held_by: str, place: tuple[str, int],
         frame: FrameType | None, targets: tuple[tuple[str, str], ...] = ()) -> Place | None:
    """Where the source assigns ``name`` (or, where ``targets`` are given, makes the first
    of those changes that it holds: ``("call", "eval")``), or None where it makes none."""
    target = _target(name, held_by)
    wanted = targets or ((target,) if target is not None else ())
    for path in _files(recorder, place[0], frame):
        for how, what in wanted:
            lines = assignments(path, how, what)
            if lines:
                after = [found for found in lines if path != place[0] or found[0] > place[1]]
                line, function = (after or lines)[0]
                return path, line, function
    return None


def _target(name: str, held_by: str) -> tuple[str, str] | None:
    """("key", "lr"), ("attribute", "scale") or ("name", "pos")."""
    if held_by == HELD_BY_OPTIMIZER:
        key = _KEY.search(name)
        return ("key", key.group(1)) if key else None
    if "." in name:
        return "attribute", name.rsplit(".", 1)[1]
    return "name", name


def _files(recorder: Recorder, first: str, frame: FrameType | None) -> list[str]:
    files = [first] if first else []
    depth = 0
    while frame is not None and depth < _DEPTH:
        path = frame.f_code.co_filename
        if recorder.stacks.is_user_code(frame.f_code) and path not in files:
            files.append(path)
        frame, depth = frame.f_back, depth + 1
    return files


@functools.lru_cache(maxsize=256)
def assignments(path: str, how: str, target: str) -> tuple[tuple[int, str], ...]:
    """(line, enclosing function) of each assignment to ``target`` in ``path``, in order."""
    tree = parse_source(path)
    if tree is None:
        return ()
    found: list[tuple[int, str]] = []
    _visit(tree, "<module>", how, target, found)
    return tuple(sorted(found))


def _visit(node: ast.AST, function: str, how: str, target: str,
           found: list[tuple[int, str]]) -> None:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            _visit(child, child.name, how, target, found)
            continue
        if isinstance(child, ast.stmt) and any(_assigns(written, how, target)
                                               for written in _written(child)):
            found.append((child.lineno, function))
        _visit(child, function, how, target, found)


def _written(node: ast.AST) -> list[ast.AST]:
    """What a statement writes, and the calls a simple statement makes (for ``call``)."""
    calls: list[ast.AST] = [part for part in ast.walk(node) if isinstance(part, ast.Call)] \
        if isinstance(node, _SIMPLE) else []
    if isinstance(node, ast.Assign):
        return [part for t in node.targets for part in ast.walk(t)] + calls
    if isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)):
        return list(ast.walk(node.target)) + calls
    return calls


_SIMPLE = (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return)


def _assigns(node: ast.AST, how: str, target: str) -> bool:
    if how == "call":  # model.eval(), torch.set_float32_matmul_precision(...)
        function = getattr(node, "func", None)
        return isinstance(node, ast.Call) and target in (getattr(function, "attr", None),
                                                         getattr(function, "id", None))
    if not isinstance(getattr(node, "ctx", None), ast.Store):
        return False  # read on the line (the index of x[pos] = ...), not written
    if how == "name":
        return isinstance(node, ast.Name) and node.id == target
    if how == "attribute":
        return isinstance(node, ast.Attribute) and node.attr == target
    return (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant)
            and node.slice.value == target)
