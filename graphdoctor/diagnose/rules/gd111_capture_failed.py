"""A capture failed for a reason no more specific rule recognises.

graphdoctor names the first error of the capture (not the "operation failed due to a
previous error during capture" that ``capture_end`` raises afterwards) and the line that
raised it. If the process died during a capture, the capture never ended; the report's
status says how it died.

How to fix: start from the first error and its line; rerun with ``CUDA_LAUNCH_BLOCKING=1``
if it names a kernel.
"""

from __future__ import annotations

from collections.abc import Iterator

from graphdoctor.diagnose.failures import cause_of, known_fix
from graphdoctor.diagnose.findings import ERROR, FAILED, Finding, Rule
from graphdoctor.diagnose.view import TraceView

ID, NAME = "GD111", "capture-failed"


def check(view: TraceView) -> Iterator[Finding]:
    for graph in view.graphs:
        cause = cause_of(view, graph)
        if cause is None or cause.kind != "other":
            continue
        if cause.link is None:
            yield RULE.finding(
                title=f"the capture of graph {graph.id} never ended",
                explanation=f"Graph {graph.id} began capturing at "
                            f"{view.where(graph.stack)} and the run ended before "
                            f"capture_end: {_how_it_ended(view)}.",
                fix="See the stacks at the end of the run in the report.",
                location=view.location(graph.stack), graph=graph.id)
            continue
        message = cause.link.message.splitlines()[0] if cause.link.message else cause.link.type
        yield RULE.finding(
            title=f"the capture of graph {graph.id} failed first at "
                  f"{view.where(cause.link.stack)}: {message[:90]}",
            explanation=f"The first error of the capture was {cause.link.type}: {message}",
            fix=known.fix if (known := known_fix(view, cause.link)) else
            "Start from this first error; later errors in the chain are its consequences.",
            evidence=(view.evidence("exceptions", cause.exception),),
            location=view.location(cause.link.stack), graph=graph.id)


def _how_it_ended(view: TraceView) -> str:
    return view.trace.status.message or "no error was recorded"


RULE = Rule(ID, NAME, check, __doc__ or "", severity=ERROR, category=FAILED)
