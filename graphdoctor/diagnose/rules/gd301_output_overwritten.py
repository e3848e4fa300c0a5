"""A graph's output was read after a later run had overwritten it.

Outputs of a reduce-overhead function live in the graph's memory pool, and the next run
writes into the same memory. PyTorch raises "accessing tensor output of CUDAGraphs that has
been overwritten by a subsequent run" when it notices (after a warmup or a recording); in
the steady state the old tensor silently shows the new values. Raw ``torch.cuda.graph``
outputs are static buffers with the same behaviour by design.

How to fix: ``.clone()`` outputs you keep across calls, or call
``torch.compiler.cudagraph_mark_step_begin()`` at the start of each step.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from graphdoctor.diagnose.findings import ERROR, UNSAFE, Finding, Rule
from graphdoctor.diagnose.view import TraceView
from graphdoctor.trace.names import UNCAUGHT

ID, NAME = "GD301", "output-overwritten"
PATTERN = re.compile(r"output of CUDAGraphs that has been overwritten")


def check(view: TraceView) -> Iterator[Finding]:
    for index, record in enumerate(view.trace.exceptions):
        if record.where != UNCAUGHT:
            continue
        link = next((lk for lk in record.chain if PATTERN.search(lk.message)), None)
        if link is None:
            continue
        yield RULE.finding(
            title=f"a compiled function's output is read at {view.where(link.stack)} after a "
                  "later call overwrote it",
            explanation="The tensor read here was returned by an earlier call of a "
                        "reduce-overhead function; a later call reused its memory, and PyTorch "
                        "stopped the read. " + link.message.split(". To prevent")[0][:300],
            fix="Clone the output if you keep it across calls (out = f(x).clone()), or call "
                "torch.compiler.cudagraph_mark_step_begin() before each step.",
            evidence=(view.evidence("exceptions", index),),
            location=view.location(link.stack), function=view.last_function_before(record.t))


RULE = Rule(ID, NAME, check, __doc__ or "", severity=ERROR, category=UNSAFE)
