"""Edits of a file's lines, and the unified diff they make.

An edit replaces whole lines (``start`` to ``end``, ``end`` excluded; ``start == end``
inserts before ``start``), so two edits of one file are independent unless their lines
overlap, and a diff shows each as the user would have written it. Node-level changes are made
on the text of the node's lines (:func:`replaced`), with ast's columns, which count UTF-8
bytes."""

from __future__ import annotations

import ast
import difflib
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Edit:
    start: int  # the first line replaced, from 1
    end: int  # the line after the last one replaced
    lines: tuple[str, ...]  # what replaces them, each ending in a newline

    def overlaps(self, other: Edit) -> bool:
        if self.start == self.end or other.start == other.end:  # an insertion
            return other.start < self.start < other.end or self.start < other.start < self.end
        return self.start < other.end and other.start < self.end


def replaced(lines: Sequence[str], node: ast.AST, text: str) -> Edit:
    """The lines of ``node`` with the node itself replaced by ``text``."""
    first, last = node.lineno, node.end_lineno or node.lineno  # type: ignore[attr-defined]
    head = lines[first - 1].encode()[:node.col_offset].decode()  # type: ignore[attr-defined]
    tail = lines[last - 1].encode()[node.end_col_offset:].decode()  # type: ignore[attr-defined]
    return Edit(first, last + 1, tuple((head + text + tail).splitlines(keepends=True)))


@dataclass(frozen=True)
class Span:
    """Text from (line, byte column) to (line, byte column), as ast counts them, and what
    replaces it (an insertion where the two are equal)."""

    line: int
    col: int
    end_line: int
    end_col: int
    text: str

    @classmethod
    def of(cls, node: ast.AST, text: str) -> Span:
        return cls(node.lineno, node.col_offset, node.end_lineno or node.lineno,  # type: ignore[attr-defined]
                   node.end_col_offset or 0, text)  # type: ignore[attr-defined]


def rewritten(lines: Sequence[str], node: ast.AST, spans: Sequence[Span]) -> Edit:
    """The lines of ``node`` with every span (all within them) replaced."""
    first, last = node.lineno, node.end_lineno or node.lineno  # type: ignore[attr-defined]
    text = "".join(lines[first - 1:last]).encode()
    starts = [0]
    for line in lines[first - 1:last]:
        starts.append(starts[-1] + len(line.encode()))
    for span in sorted(spans, key=lambda s: (s.line, s.col), reverse=True):
        start = starts[span.line - first] + span.col
        end = starts[span.end_line - first] + span.end_col
        text = text[:start] + span.text.encode() + text[end:]
    return Edit(first, last + 1, tuple(text.decode().splitlines(keepends=True)))


def inserted(before: int, lines: Sequence[str]) -> Edit:
    return Edit(before, before, tuple(lines))


def removed(node: ast.stmt) -> Edit:
    return Edit(node.lineno, (node.end_lineno or node.lineno) + 1, ())


def indented(lines: Sequence[str], by: str) -> list[str]:
    return [by + line if line.strip() else line for line in lines]


def apply(lines: Sequence[str], edits: Sequence[Edit]) -> list[str]:
    """``lines`` with every edit made (none overlapping; see :meth:`Edit.overlaps`)."""
    result = list(lines)
    for edit in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
        result[edit.start - 1:edit.end - 1] = edit.lines
    return result


def unified(name: str, before: Sequence[str], after: Sequence[str]) -> str:
    """A diff ``git apply`` and ``patch -p1`` take, run in the recording's folder."""
    ended = [line if line.endswith("\n") else line + "\n" for line in before]
    return "".join(difflib.unified_diff(ended, after, f"a/{name}", f"b/{name}"))
