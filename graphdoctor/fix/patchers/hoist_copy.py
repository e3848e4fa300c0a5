"""GD102 pageable-copy-in-capture: the tensor made from host data moves before the capture,
made once on the GPU and read by every replay, when it depends on nothing the captured block
computes: the whole statement (``weights = torch.tensor([0.5, 0.25], device="cuda")``), or
the call that makes it, under a name of its own (``y = x * torch.tensor(...)`` becomes
``staged = torch.tensor(...)`` before the block and ``y = x * staged``). A copy of host data
the block computes has no mechanical fix: none is offered."""

from __future__ import annotations

import ast

from graphdoctor.diagnose.findings import Finding
from graphdoctor.fix.edits import inserted, removed, replaced
from graphdoctor.fix.patchers import Change, Options
from graphdoctor.fix.source import Source, called_name, calls_in, names_bound, names_read

MAKERS = frozenset({"tensor", "as_tensor", "cuda", "to"})  # what copies host data to the GPU


def patch(finding: Finding, source: Source, options: Options) -> Change | None:
    if finding.location is None:
        return None
    statement = source.statement_at(finding.location.line)
    block = source.capture_block(statement) if statement is not None else None
    if statement is None or block is None or statement not in block.body:
        return None
    computed = names_bound([s for s in block.body if s.lineno < statement.lineno])
    made = next((c for c in calls_in(statement) if called_name(c) in MAKERS
                 and not names_read(c) & computed), None)
    if made is None:
        return None
    if isinstance(statement, ast.Assign) and statement.value is made:
        return _hoisted(source, statement, block)
    return _staged(source, statement, block, made)


def _hoisted(source: Source, statement: ast.stmt, block: ast.With) -> Change:
    hoisted = source.lines_at_level_of(statement, block)
    return Change((inserted(block.lineno, hoisted), removed(statement)),
                  f"make the tensor of line {statement.lineno} once, before the capture at "
                  f"line {block.lineno}")


def _staged(source: Source, statement: ast.stmt, block: ast.With, made: ast.Call) -> Change:
    name = source.free_name("staged", "staged_values")
    before = f"{source.indent(block.lineno)}{name} = {source.segment(made)}\n"
    return Change((inserted(block.lineno, [before]), replaced(source.lines, made, name)),
                  f"make {source.segment(made)} once, as {name}, before the capture at line "
                  f"{block.lineno}")
