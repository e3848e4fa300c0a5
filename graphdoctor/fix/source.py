"""A user's source file as the patchers read it: its lines and syntax tree, and the
questions each asks of it (the statement at a line, the capture block around it, the text of
a node), answered from the tree, never by matching text."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property

INDENT = "    "
CAPTURE_CONTEXTS = frozenset({"graph"})  # torch.cuda.graph(g): the manual capture block


@dataclass(frozen=True)
class Source:
    """``file`` as the report names it; ``text``, what the recording digested; ``path``, the
    file it was read from, links resolved ("" for a text not read from a file)."""

    file: str
    text: str
    path: str = ""
    parents: dict[ast.AST, ast.AST] = field(default_factory=dict, compare=False)

    @cached_property
    def lines(self) -> list[str]:
        return self.text.splitlines(keepends=True)

    @cached_property
    def tree(self) -> ast.Module | None:
        try:
            tree = ast.parse(self.text)
        except (SyntaxError, ValueError):
            return None
        self.parents.update({child: node for node in ast.walk(tree)
                             for child in ast.iter_child_nodes(node)})
        return tree

    def segment(self, node: ast.AST) -> str:
        return ast.get_source_segment(self.text, node) or ""

    def indent(self, line: int) -> str:
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        return text[:len(text) - len(text.lstrip())]

    def lines_at_level_of(self, statement: ast.stmt, outer: ast.stmt) -> list[str]:
        """The statement's lines with the indentation it has beyond ``outer`` taken off:
        as written at ``outer``'s level (where a patch moves it)."""
        extra = self.indent(statement.lineno)[len(self.indent(outer.lineno)):]
        lines = self.lines[statement.lineno - 1:statement.end_lineno or statement.lineno]
        return [line[len(extra):] if line.startswith(extra) else line for line in lines]

    def statement_at(self, line: int) -> ast.stmt | None:
        """The innermost simple statement that spans ``line``."""
        found = [node for node in self._walk() if isinstance(node, ast.stmt)
                 and not _compound(node) and _spans(node, line)]
        return found[-1] if found else None

    def ancestors(self, node: ast.AST) -> Iterator[ast.AST]:
        while node in self.parents:
            node = self.parents[node]
            yield node

    def capture_block(self, node: ast.AST) -> ast.With | None:
        """The ``with torch.cuda.graph(...)`` block around ``node``."""
        return next((a for a in self.ancestors(node)
                     if isinstance(a, ast.With) and any(map(_captures, a.items))), None)

    def loop_around(self, node: ast.AST) -> ast.For | None:
        return next((a for a in self.ancestors(node) if isinstance(a, ast.For)), None)

    def free_name(self, *wanted: str) -> str:
        """The first of ``wanted`` the file does not use for anything (then ``wanted[0]``
        numbered)."""
        used = {getattr(n, "id", None) or getattr(n, "name", None) or getattr(n, "arg", None)
                for n in self._walk()}
        candidates = [*wanted, *(f"{wanted[0]}_{n}" for n in range(2, 100))]
        return next(name for name in candidates if name not in used)

    def _walk(self) -> Iterator[ast.AST]:
        return ast.walk(self.tree) if self.tree is not None else iter(())


def _compound(node: ast.stmt) -> bool:
    return isinstance(node, (ast.With, ast.For, ast.While, ast.If, ast.Try, ast.FunctionDef,
                             ast.AsyncFunctionDef, ast.ClassDef, ast.AsyncWith, ast.AsyncFor))


def _spans(node: ast.stmt, line: int) -> bool:
    return node.lineno <= line <= (node.end_lineno or node.lineno)


def _captures(item: ast.withitem) -> bool:
    call = item.context_expr
    return isinstance(call, ast.Call) and called_name(call) in CAPTURE_CONTEXTS


def called_name(call: ast.Call) -> str:
    """``step`` of ``opt.step()``, ``float`` of ``float(x)``."""
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def calls_in(node: ast.AST) -> list[ast.Call]:
    return [n for n in ast.walk(node) if isinstance(n, ast.Call)]


def names_read(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Load)}


def names_bound(nodes: list[ast.stmt]) -> set[str]:
    return {n.id for node in nodes for n in ast.walk(node) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Store)}
