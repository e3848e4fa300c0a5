"""GD103 unjoined-side-stream: the join the capture lacks, ``torch.cuda.current_stream()
.wait_stream(side)``, as the last statement of the captured block, for the stream the fork
line names (``side.wait_stream(...)`` or ``with torch.cuda.stream(side):``)."""

from __future__ import annotations

import ast

from graphdoctor.diagnose.findings import Finding
from graphdoctor.fix.edits import inserted
from graphdoctor.fix.patchers import Change, Options
from graphdoctor.fix.source import Source, called_name, calls_in


def patch(finding: Finding, source: Source, options: Options) -> Change | None:
    if finding.location is None or (fork := source.statement_at(finding.location.line)) is None:
        return None
    side = _forked_stream(source, fork)
    block = source.capture_block(fork)
    if not side or block is None:
        return None
    last = block.body[-1]
    end = last.end_lineno or last.lineno
    join = f"{source.indent(block.body[0].lineno)}torch.cuda.current_stream().wait_stream({side})\n"
    return Change((inserted(end + 1, [join]),),
                  f"join {side} back into the capture before the block at line "
                  f"{block.lineno} ends")


def _forked_stream(source: Source, fork: ast.stmt) -> str:
    for call in calls_in(fork):
        if called_name(call) == "wait_stream" and isinstance(call.func, ast.Attribute):
            return source.segment(call.func.value)
    return ""
