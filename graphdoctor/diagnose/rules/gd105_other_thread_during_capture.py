"""Another thread's CUDA work during a capture in the default "global" mode.

With ``capture_error_mode="global"`` (the default), CUDA forbids unsafe calls (a fresh
``cudaMalloc``, ``cudaHostAlloc``, event queries) from every thread of the process while any
stream is capturing. A DataLoader pin-memory thread, a prefetcher or a logger that touches
the GPU then fails with "operation not permitted when stream is capturing", and the capture
itself is invalidated.

How to fix: stop background GPU work during capture, or capture with
``torch.cuda.graph(g, capture_error_mode="thread_local")`` so only the capturing thread is
restricted.
"""

from __future__ import annotations

from collections.abc import Iterator

from graphdoctor.diagnose.failures import failures_of_kind
from graphdoctor.diagnose.findings import ERROR, FAILED, Finding, Rule
from graphdoctor.diagnose.view import TraceView

ID, NAME = "GD105", "other-thread-during-capture"


def check(view: TraceView) -> Iterator[Finding]:
    for graph, cause in failures_of_kind(view, "other_thread"):
        thread = view.trace.exceptions[cause.exception].thread
        yield RULE.finding(
            title=f"thread {thread} used the GPU at {view.where(cause.link.stack)} while graph "
                  f"{graph.id} was capturing",
            explanation=(f"While graph {graph.id} was being captured in "
                         f"\"{graph.capture_error_mode}\" mode, thread {thread} made a CUDA "
                         "call that is not allowed during a capture (a new allocation, here). "
                         "It failed with \"operation not permitted when stream is capturing\", "
                         "which also invalidated the capture."),
            fix="Keep other threads off the GPU during capture, or capture with "
                "capture_error_mode=\"thread_local\".",
            evidence=(view.evidence("exceptions", cause.exception),)
            + tuple(view.evidence("exceptions", i) for i, _ in view.exceptions_of(graph)),
            location=view.location(cause.link.stack), graph=graph.id)


RULE = Rule(ID, NAME, check, __doc__ or "", severity=ERROR, category=FAILED)
