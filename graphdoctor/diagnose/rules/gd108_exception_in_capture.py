"""An ordinary Python exception inside the captured block abandons the capture.

When the code inside ``with torch.cuda.graph(g):`` raises, the capture is ended with the
work captured so far and the exception propagates; the graph must not be replayed. The
traceback often points at the ``with`` line's ``__exit__`` rather than at the cause when
``capture_end`` fails too.

How to fix: fix the exception; run the step eagerly (warmup) first, where the same error
shows up with a plain traceback. An error of the known-errors table (an optimizer made
without ``capturable=True``) gets that table's fix.
"""

from __future__ import annotations

from collections.abc import Iterator

from graphdoctor.diagnose.failures import failures_of_kind, known_fix
from graphdoctor.diagnose.findings import ERROR, FAILED, Finding, Rule
from graphdoctor.diagnose.view import TraceView

ID, NAME = "GD108", "exception-in-capture"
KNOWN_ERROR = "known_error"  # the measurement naming the known-errors table's row
FIX = ("Fix the error; running the step once eagerly before capture shows it with an ordinary "
       "traceback.")


def check(view: TraceView) -> Iterator[Finding]:
    for graph, cause in failures_of_kind(view, "python_exception"):
        first_line = cause.link.message.splitlines()[0] if cause.link.message else ""
        known = known_fix(view, cause.link)
        yield RULE.finding(
            title=(f"{known.what}: " if known else "")
            + f"{cause.link.type} at {view.where(cause.link.stack)} inside the capture of "
              f"graph {graph.id}",
            explanation=f"The captured block raised {cause.link.type}({first_line!r}), which "
                        "abandoned the capture.",
            fix=known.fix if known else FIX,
            evidence=(view.evidence("exceptions", cause.exception),),
            location=view.location(cause.link.stack), graph=graph.id,
            measurements={KNOWN_ERROR: known.name} if known else {})


RULE = Rule(ID, NAME, check, __doc__ or "", severity=ERROR, category=FAILED)
