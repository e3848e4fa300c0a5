"""Where the source keeps a captured graph's output, and reads it after the next replay.

Given the line a script's frame is on while a graph replays (its ``g.replay()``, or the call
that leads there) and the name or dotted name of what holds an output (``generated``,
``self.prev``), the statements of the innermost loop around that line are read with
``ast``: the first that stores into it (``generated.append(...)``, ``history[t] = ...``,
``self.prev = ...``) is the line that keeps it; a statement that reads it after a replay
that came after a store, going round the loop (``delta = out - self.prev`` below the replay,
``self.prev = out`` at the loop's end), is the line that reads it stale. Read once per line,
and only at the replays already sampled. Imports no torch.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator

from graphdoctor.record.frozen.captured_names import parse_source
from graphdoctor.record.frozen.captured_reads import Chain, chain_of

_STORES = frozenset({"append", "extend", "insert", "appendleft", "extendleft", "setdefault",
                     "update", "add"})
_LOOPS = (ast.For, ast.AsyncFor, ast.While)


@functools.lru_cache(maxsize=1024)
def keeping_line(path: str, line: int, holder: Chain) -> int | None:
    """The first statement of the loop around ``line`` (else of the whole file, the first
    after ``line``, else the first) that stores into ``holder``."""
    tree = parse_source(path)
    if tree is None:
        return None
    loop = _loop_at(tree, line)
    found = [n for n in _statements(loop.body if loop else tree.body) if _stores(n, holder)]
    if not found and loop is not None:
        found = [n for n in _statements(tree.body) if _stores(n, holder)]
        found = [n for n in found if n.lineno > line] or found
    return found[0].lineno if found else None


@functools.lru_cache(maxsize=1024)
def stale_read(path: str, line: int, holder: Chain) -> int | None:
    """A line of the loop around ``line`` (the replay) that reads ``holder`` after the replay
    that followed its last store: in the loop's order, store, then replay, then read."""
    tree = parse_source(path)
    loop = _loop_at(tree, line) if tree is not None else None
    if loop is None:
        return None
    statements = list(_statements(loop.body))
    stores = [n.lineno for n in statements if _stores(n, holder)]
    reads = [n.lineno for n in statements if not _stores(n, holder) and _reads(n, holder)]
    first, last = loop.body[0].lineno, loop.body[-1].end_lineno or loop.body[-1].lineno
    span = last - first + 1
    for read in reads:
        if any(0 < (line - store) % span < (read - store) % span for store in stores):
            return read
    return None


def _loop_at(tree: ast.Module, line: int) -> ast.For | ast.AsyncFor | ast.While | None:
    """The innermost loop whose body holds ``line``."""
    best: ast.For | ast.AsyncFor | ast.While | None = None
    for node in ast.walk(tree):
        if isinstance(node, _LOOPS) and node.body and node.body[0].lineno <= line \
                <= (node.body[-1].end_lineno or node.body[-1].lineno):
            if best is None or node.lineno > best.lineno:
                best = node
    return best


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The simple statements of a block and of the blocks inside it, in order."""
    for statement in body:
        inner = [getattr(statement, name, None) for name in ("body", "orelse", "finalbody")]
        blocks = [block for block in inner if isinstance(block, list) and block]
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if not blocks:
            yield statement
        for block in blocks:
            yield from _statements(block)


def _stores(statement: ast.stmt, holder: Chain) -> bool:
    """``holder.append(...)`` and its kind, ``holder[...] = ...``, ``holder = ...``."""
    if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        for target in targets:
            stored = target.value if isinstance(target, ast.Subscript) else target
            if chain_of(stored) == holder:
                return True
    call = statement.value if isinstance(statement, ast.Expr) else None
    return (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
            and call.func.attr in _STORES and chain_of(call.func.value) == holder)


def _reads(statement: ast.stmt, holder: Chain) -> bool:
    return any(chain_of(node) == holder for node in ast.walk(statement)
               if isinstance(getattr(node, "ctx", None), ast.Load))
