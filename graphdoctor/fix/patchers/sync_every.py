"""GD203 sync-between-replays: the line that reads a value from the GPU every step runs every
``--every`` steps of the loop around it (``if step % 10 == 0:``), the loop's variable named
(``step``, or a name the file does not use) where it had none (``for _ in ...``). What the
line accumulates then sums one step in ``--every``: the patch says so, and accumulating on
the GPU is the other fix."""

from __future__ import annotations

import ast

from graphdoctor.diagnose.findings import Finding
from graphdoctor.fix.edits import Edit, indented, replaced
from graphdoctor.fix.patchers import Change, Options
from graphdoctor.fix.source import INDENT, Source

UNNAMED = "_"
STEP_NAMES = ("step", "i")


def patch(finding: Finding, source: Source, options: Options) -> Change | None:
    if finding.location is None:
        return None
    statement = source.statement_at(finding.location.line)
    loop = source.loop_around(statement) if statement is not None else None
    if statement is None or loop is None or not isinstance(loop.target, ast.Name):
        return None
    edits: list[Edit] = []
    name = loop.target.id
    if name == UNNAMED:
        name = source.free_name(*STEP_NAMES)
        edits.append(replaced(source.lines, loop.target, name))
    end = statement.end_lineno or statement.lineno
    indent = source.indent(statement.lineno)
    body = indented(source.lines[statement.lineno - 1:end], INDENT)
    edits.append(Edit(statement.lineno, end + 1,
                      (f"{indent}if {name} % {options.every} == 0:\n", *body)))
    return Change(tuple(edits), f"run line {statement.lineno} every {options.every} steps of "
                                f"the loop at line {loop.lineno} (what it sums then skips the "
                                f"steps between)")
