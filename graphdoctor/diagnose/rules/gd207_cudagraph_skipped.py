"""torch.compile skipped CUDA graphs for a function, and said so only in a log line.

Under ``mode="reduce-overhead"`` Inductor refuses to capture a graph it cannot replay
safely, runs the compiled kernels without a graph, and logs "skipping cudagraphs due to
<reason>" (up to 2.10 only when ``TORCH_LOGS=perf_hints`` is set). Common reasons: an input
mutated in place that the graph does not own ("mutated inputs"), a CPU tensor or op in the
graph ("cpu device"), an op with a data-dependent output ("incompatible op"), several
devices, or the re-recording limit.

Where: the line torch names as the cause ("Found from", the stack of the mutation), in the
user's code where that stack reaches it; otherwise the library's line, with the user's line
that called into the library (from the stack of the compile that ran into the skip). Only
where torch gives no stack does the finding fall back to the stack the log line was written
from, whose innermost user line is the compiled function's ``def``.

How to fix: address the reason given: return new values instead of writing into inputs,
or mark persistent buffers with ``torch._dynamo.mark_static_address``; keep the compiled
region on one GPU; pad dynamic shapes. ``torch._inductor.config.triton.cudagraph_or_error =
True`` turns a skip into an error.
"""

from __future__ import annotations

from collections.abc import Iterator

from graphdoctor.diagnose.findings import SKIPPED, WARNING, Finding, Rule
from graphdoctor.diagnose.view import TraceView
from graphdoctor.trace.model import USER, CompileEvent
from graphdoctor.trace.names import CUDAGRAPH_SKIP

ID, NAME = "GD207", "cudagraph-skipped"


def check(view: TraceView) -> Iterator[Finding]:
    for index, event in view.compile_events(CUDAGRAPH_SKIP):
        fn = view.function_at(event.t)
        function = view.function(fn) if fn >= 0 else None
        name = function.name if function else "a compiled function"
        where = f"at {view.where(event.stack)}{_called_from(view, event)}"
        yield RULE.finding(
            title=f"CUDA graphs skipped for {name}: {event.reason} {where}",
            explanation=(f"torch.compile ran {name} without a CUDA graph because of "
                         f"\"{event.reason}\" {where}; every call launches its kernels one "
                         "by one."),
            fix=_fix(event.reason),
            evidence=(view.evidence("compile_events", index),),
            location=view.location(event.stack), function=fn)


def _called_from(view: TraceView, event: CompileEvent) -> str:
    """The text ", called from file.py:12" where the culprit is a library's line: the user's
    call into the library, from the stack of the compile that ran into the skip."""
    culprit = view.culprit_frame(event.stack)
    if culprit is None or culprit.kind == USER:
        return ""
    caller = view.call_into_library(view.compile_stack_before(event.t))
    return f", called from {view.where_frame(caller)}" if caller else ""


def _fix(reason: str) -> str:
    if reason.startswith("mutated inputs"):
        return ("Do not write into tensors the function receives or closes over; return the "
                "new value, or mark the buffer with torch._dynamo.mark_static_address.")
    if "cpu" in reason:
        return "Keep every tensor of the compiled region on the GPU."
    if "incompatible op" in reason:
        return "Replace the op with a static-shape alternative, or move it out of the region."
    return "Address the reason PyTorch gives; set cudagraph_or_error=True to make skips loud."


RULE = Rule(ID, NAME, check, __doc__ or "", severity=WARNING, category=SKIPPED)
