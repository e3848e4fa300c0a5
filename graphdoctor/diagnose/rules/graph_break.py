"""A graph break splits a compiled function into pieces, each its own CUDA graph.

torch.compile stops tracing at code it cannot put in a graph (``.item()``, data-dependent
Python branches, unsupported calls) and runs that part in Python. Under reduce-overhead,
each piece then becomes a separate graph with eager Python between them: more launches,
more bookkeeping, and the CPU back in the loop at every break.

How to fix: remove the break (``fullgraph=True`` finds them); for ``.item()`` set
``torch._dynamo.config.capture_scalar_outputs = True`` or keep the value as a tensor;
replace data-dependent branches with ``torch.where`` or ``torch.cond``.
"""

from __future__ import annotations

from collections.abc import Iterator

from graphdoctor.diagnose.model import INFO, NEUTRAL, WARNING, Finding, Rule
from graphdoctor.diagnose.view import TraceView
from graphdoctor.trace.names import GRAPH_BREAK

ID, NAME = "GD206", "graph-break"


def check(view: TraceView) -> Iterator[Finding]:
    graphed = [fn for fn in view.compiled_functions if view.graphs_of(fn.id)]
    seen: set[tuple[str, int]] = set()
    for index, event in view.compile_events(GRAPH_BREAK):
        frame = view.culprit_frame(event.stack)
        key = (frame.file, frame.line) if frame else (event.reason, index)
        if key in seen:
            continue
        seen.add(key)
        split = len(graphed) > 1
        yield Finding(
            ID, NAME, WARNING if split else INFO, NEUTRAL,
            title=f"graph break at {view.where(event.stack)}: {event.reason[:100]}",
            explanation=("torch.compile stopped the graph here and runs this code in Python. "
                         + (f"Under reduce-overhead the step became {len(graphed)} separate "
                            "CUDA graphs with eager Python between them." if split else "")),
            fix="Remove the break: keep values as tensors instead of Python scalars, or set "
                "torch._dynamo.config.capture_scalar_outputs = True for .item().",
            evidence=(view.evidence("compile_events", index),),
            location=view.location(event.stack), measurements={"graphs": len(graphed)})


RULE = Rule(ID, NAME, check, __doc__ or "")
