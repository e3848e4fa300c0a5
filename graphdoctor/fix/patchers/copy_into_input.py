"""GD302 freed-captured-input: ``x = new`` binds the name to a new tensor and lets the one
the graph reads go; ``x.copy_(new)`` writes the new values into the tensor the replays read.
A loop that binds it (``for x in batches:``) loops over another name and copies each into
``x`` first."""

from __future__ import annotations

import ast

from graphdoctor.diagnose.findings import Finding
from graphdoctor.fix.edits import inserted, replaced
from graphdoctor.fix.patchers import Change, Options
from graphdoctor.fix.source import Source

TARGETS = (ast.Name, ast.Attribute, ast.Subscript)


def patch(finding: Finding, source: Source, options: Options) -> Change | None:
    if finding.location is None or source.tree is None:
        return None
    line = finding.location.line
    loop = next((n for n in ast.walk(source.tree) if isinstance(n, ast.For)
                 and n.lineno == line and isinstance(n.target, ast.Name)), None)
    if loop is not None:
        return _loop(source, loop)
    statement = source.statement_at(line)
    if not isinstance(statement, ast.Assign) or len(statement.targets) != 1 \
            or not isinstance(statement.targets[0], TARGETS):
        return None
    name, value = source.segment(statement.targets[0]), source.segment(statement.value)
    return Change((replaced(source.lines, statement, f"{name}.copy_({value})"),),
                  f"copy into {name} at line {statement.lineno} instead of rebinding it")


def _loop(source: Source, loop: ast.For) -> Change:
    name = source.segment(loop.target)
    other = source.free_name("batch", f"new_{name}")
    first = loop.body[0].lineno
    return Change((replaced(source.lines, loop.target, other),
                   inserted(first, [f"{source.indent(first)}{name}.copy_({other})\n"])),
                  f"loop over {other} at line {loop.lineno} and copy each into {name}")
