"""A library initialized itself inside the capture: the step was not warmed up.

The first cuBLAS, cuDNN or cuFFT call of a process creates handles and workspaces with
plain ``cudaMalloc``, which a capture forbids ("CUBLAS_STATUS_NOT_INITIALIZED when calling
cublasCreate"). Autotuning (``cudnn.benchmark``, Triton) also runs on first use. The captured
step must have run eagerly, on the same stream and thread, before capture.

How to fix: run the step a few times before capturing (three iterations on a side stream
is the documented pattern; 11 with DDP).
"""

from __future__ import annotations

from collections.abc import Iterator

from graphdoctor.diagnose.failures import failures_of_kind, known_fix
from graphdoctor.diagnose.findings import ERROR, FAILED, Finding, Rule
from graphdoctor.diagnose.view import TraceView

ID, NAME = "GD110", "library-init-in-capture"
FIX = ("Run the captured step eagerly a few times before capture, on the capture "
       "stream's side stream (the warmup pattern in the CUDA graphs docs).")


def check(view: TraceView) -> Iterator[Finding]:
    for graph, cause in failures_of_kind(view, "library_init"):
        library = cause.link.cuda_error.split("_", 1)[0] or "a CUDA library"
        known = known_fix(view, cause.link)
        yield RULE.finding(
            title=(f"{known.what}, at {view.where(cause.link.stack)} (graph {graph.id}): the "
                   "step was not warmed up with these shapes" if known else
                   f"{library} first ran inside the capture of graph {graph.id}, at "
                   f"{view.where(cause.link.stack)}: no warmup"),
            explanation=f"{library} initialized itself (handles, workspace allocations) during "
                        "the capture, which is not allowed: "
                        + cause.link.message.splitlines()[0],
            fix=known.fix if known else FIX,
            evidence=(view.evidence("exceptions", cause.exception),),
            location=view.location(cause.link.stack), graph=graph.id)


RULE = Rule(ID, NAME, check, __doc__ or "", severity=ERROR, category=FAILED)
