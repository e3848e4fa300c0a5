"""Where an optimizer was made, found from a line that steps it (``opt.step()``): the last
assignment to ``opt`` before that line whose value is a call (``torch.optim.AdamW(...)``);
and that call written again with keyword arguments set."""

from __future__ import annotations

import ast

from graphdoctor.fix.edits import Edit, replaced
from graphdoctor.fix.source import INDENT, Source, called_name, calls_in

LONGEST_LINE = 100  # a call longer than this is written one argument per line


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
    """``call`` with each of ``keywords`` (name -> source text) set, in place where given,
    appended where not."""
    args = [source.segment(a) for a in call.args]
    given = {k.arg: k for k in call.keywords if k.arg is not None}
    kept = [f"{k.arg}={keywords[k.arg]}" if k.arg in keywords else source.segment(k)
            for k in call.keywords]
    added = [f"{name}={text}" for name, text in keywords.items() if name not in given]
    parts, head = args + kept + added, source.segment(call.func)
    text = f"{head}({', '.join(parts)})"
    start = source.lines[call.lineno - 1].encode()[:call.col_offset].decode()
    if len(start) + len(text) > LONGEST_LINE:
        indent = source.indent(call.lineno) + INDENT
        text = f"{head}(\n" + "".join(f"{indent}{part},\n" for part in parts) + \
            f"{source.indent(call.lineno)})"
    return replaced(source.lines, call, text)
