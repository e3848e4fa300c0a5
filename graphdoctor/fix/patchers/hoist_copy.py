"""GD102 pageable-copy-in-capture: the tensor made from host data moves before the capture,
made once on the GPU and read by every replay, when it depends on nothing the captured block
computes (``weights = torch.tensor([0.5, 0.25], device="cuda")``). A copy of host data the
block computes has no mechanical fix: none is offered."""

from __future__ import annotations

import ast

from graphdoctor.diagnose.findings import Finding
from graphdoctor.fix.edits import inserted, removed
from graphdoctor.fix.patchers import Change, Options
from graphdoctor.fix.source import Source, names_bound, names_read


def patch(finding: Finding, source: Source, options: Options) -> Change | None:
    if finding.location is None:
        return None
    statement = source.statement_at(finding.location.line)
    block = source.capture_block(statement) if statement is not None else None
    if not isinstance(statement, ast.Assign) or block is None:
        return None
    earlier = [s for s in block.body if s.lineno < statement.lineno]
    if names_read(statement.value) & names_bound(earlier) or statement not in block.body:
        return None
    end = statement.end_lineno or statement.lineno
    depth = len(source.indent(statement.lineno)) - len(source.indent(block.lineno))
    hoisted = [line[depth:] for line in source.lines[statement.lineno - 1:end]]
    return Change((inserted(block.lineno, hoisted), removed(statement)),
                  f"make the tensor of line {statement.lineno} once, before the capture at "
                  f"line {block.lineno}")
