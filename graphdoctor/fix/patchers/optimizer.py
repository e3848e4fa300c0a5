"""Where an optimizer was made, found from a line that steps it (``opt.step()``): the last
assignment to ``opt`` before that line whose value is a call (``torch.optim.AdamW(...)``);
and that call with keyword arguments set, in the call's own layout: a keyword given is
changed where it is, one not given follows the last argument (on a line of its own in a call
written one argument per line)."""

from __future__ import annotations

import ast

from graphdoctor.fix.edits import Edit, Span, rewritten
from graphdoctor.fix.source import INDENT, Source, called_name, calls_in


def made_at(source: Source, step_line: int, kind: str = "") -> ast.Call | None:
    """The call that made the optimizer stepped at ``step_line`` (of class ``kind``, where
    known)."""
    statement = source.statement_at(step_line)
    steps = [c for c in calls_in(statement) if called_name(c) == "step"
             and isinstance(c.func, ast.Attribute)] if statement is not None else []
    if not steps or source.tree is None:
        return None
    receiver = source.segment(steps[0].func.value)  # type: ignore[attr-defined]
    made = [node.value for node in ast.walk(source.tree) if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call) and node.lineno < step_line
            and any(source.segment(t) == receiver for t in node.targets)
            and (not kind or called_name(node.value) == kind)]
    return max(made, key=lambda call: call.lineno, default=None)


def with_keywords(source: Source, call: ast.Call, keywords: dict[str, str]) -> Edit:
    """``call`` with each of ``keywords`` (name -> source text) set."""
    given = {k.arg: k for k in call.keywords if k.arg is not None}
    spans = [Span.of(given[name].value, text) for name, text in keywords.items()
             if name in given]
    added = [f"{name}={text}" for name, text in keywords.items() if name not in given]
    if added:
        spans.append(_after_the_arguments(source, call, added))
    return rewritten(source.lines, call, spans)


def _after_the_arguments(source: Source, call: ast.Call, added: list[str]) -> Span:
    arguments: list[ast.expr | ast.keyword] = [*call.args, *call.keywords]
    if not arguments:  # f(): inside the parentheses
        line, col = call.end_lineno or call.lineno, (call.end_col_offset or 1) - 1
        return Span(line, col, line, col, ", ".join(added))
    last = arguments[-1]
    line, col = last.end_lineno or last.lineno, last.end_col_offset or 0
    if line == (call.end_lineno or call.lineno):  # the closing parenthesis on the same line
        return Span(line, col, line, col, "".join(f", {a}" for a in added))
    indent = source.indent(last.lineno) if last.lineno > call.lineno else \
        source.indent(call.lineno) + INDENT
    return Span(line, col, line, col, "".join(f",\n{indent}{a}" for a in added))
