"""GD101 sync-in-capture: the value stays on the GPU, or the line that reads it moves out of
the capture.

- ``t.item()``, ``float(t)``, ``int(t)``: ``t`` itself, a 0-d tensor the captured kernels
  read on the device (``scale = y.abs().max()`` then ``y / scale``);
- ``torch.cuda.synchronize()`` (or a stream's or an event's): removed; work in a capture is
  ordered by its stream, and nothing runs until a replay;
- ``print(...)``, ``.cpu()``, ``.tolist()``, ``.numpy()`` in a statement whose result the
  block does not use: moved after the block, or after the replay that follows it, where the
  value it reads has been computed.
"""

from __future__ import annotations

import ast

from graphdoctor.diagnose.findings import Finding
from graphdoctor.fix.edits import inserted, removed, replaced
from graphdoctor.fix.patchers import Change, Options
from graphdoctor.fix.source import Source, called_name, calls_in, names_bound, names_read

TO_HOST = frozenset({"item"})
CASTS = frozenset({"float", "int"})
WAITS = frozenset({"synchronize"})
READS = frozenset({"print", "cpu", "tolist", "numpy"})


def patch(finding: Finding, source: Source, options: Options) -> Change | None:
    if finding.location is None:
        return None
    statement = source.statement_at(finding.location.line)
    block = source.capture_block(statement) if statement is not None else None
    if statement is None or block is None:
        return None
    calls = calls_in(statement)
    names = {called_name(c) for c in calls}
    if names & WAITS and isinstance(statement, ast.Expr):
        return Change((removed(statement),), f"remove the synchronize at line "
                                             f"{statement.lineno}: a capture needs none")
    if names & (TO_HOST | CASTS):
        return _on_device(source, statement, calls)
    if names & READS:
        return _moved(source, statement, block)
    return None


def _on_device(source: Source, statement: ast.stmt, calls: list[ast.Call]) -> Change | None:
    """The outermost host read of the statement, left on the device."""
    for call in calls:  # ast.walk: outermost first
        kept = _device_side(call)
        if kept is not None:
            edit = replaced(source.lines, call, source.segment(kept))
            return Change((edit,), f"keep {source.segment(call)} on the GPU as "
                                   f"{source.segment(kept)} (a 0-d tensor) at line "
                                   f"{call.lineno}")
    return None


def _device_side(call: ast.Call) -> ast.expr | None:
    if called_name(call) in TO_HOST and isinstance(call.func, ast.Attribute) and not call.args:
        return call.func.value
    if isinstance(call.func, ast.Name) and call.func.id in CASTS and len(call.args) == 1:
        return call.args[0]
    return None


def _moved(source: Source, statement: ast.stmt, block: ast.With) -> Change | None:
    later = [s for s in block.body if s.lineno > (statement.end_lineno or statement.lineno)]
    if names_bound([statement]) & names_read(ast.Module(body=later, type_ignores=[])):
        return None  # the block goes on to use what it read
    moved = source.lines_at_level_of(statement, block)
    after = _after(source, block)
    where = f"after the replay at line {after - 1}" if after != _end(block) + 1 else \
        "after the capture block"
    return Change((removed(statement), inserted(after, moved)),
                  f"move line {statement.lineno} {where}, where its value exists")


def _after(source: Source, block: ast.With) -> int:
    """The line after the block's first replay that follows it at its level, else after the
    block itself."""
    parent = source.parents.get(block)
    siblings = list(getattr(parent, "body", []))
    following = siblings[siblings.index(block) + 1:] if block in siblings else []
    for node in following:
        if any(called_name(c) == "replay" for c in calls_in(node)):
            return _end(node) + 1
    return _end(block) + 1


def _end(node: ast.stmt) -> int:
    return node.end_lineno or node.lineno


