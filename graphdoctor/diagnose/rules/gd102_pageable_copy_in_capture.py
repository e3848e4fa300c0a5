"""A copy between pageable host memory and the GPU inside a capture.

A graph replays the addresses it captured. Host memory that is not pinned may move or be
freed, so PyTorch (2.11 and later) refuses the copy: "Cannot copy between CPU and CUDA
tensors during CUDA graph capture unless the CPU tensor is pinned". Older releases captured
it and replayed stale data. Typical culprits: ``torch.tensor([...], device="cuda")``, a CPU
constant moved to the GPU inside ``forward``, ``.cpu()`` for logging.

How to fix: build constants on the GPU once, before capture, and reuse them; or copy from a
pinned buffer that lives as long as the graph.
"""

from __future__ import annotations

from collections.abc import Iterator

from graphdoctor.diagnose.failures import failures_of_kind
from graphdoctor.diagnose.findings import ERROR, FAILED, Finding, Rule
from graphdoctor.diagnose.view import TraceView

ID, NAME = "GD102", "pageable-copy-in-capture"


def check(view: TraceView) -> Iterator[Finding]:
    for graph, cause in failures_of_kind(view, "pageable_copy"):
        yield RULE.finding(
            title=f"a host-to-GPU copy at {view.where(cause.link.stack)} inside the capture of "
                  f"graph {graph.id}",
            explanation="This line copies between pageable CPU memory and the GPU while the "
                        "graph is being captured; a replay could not repeat it safely, so "
                        "PyTorch refused it: " + cause.link.message.splitlines()[0],
            fix="Create the tensor on the GPU once before capture and reuse it inside the "
                "captured step (or copy from a pinned buffer kept alive with the graph).",
            evidence=(view.evidence("exceptions", cause.exception),),
            location=view.location(cause.link.stack), graph=graph.id)


RULE = Rule(ID, NAME, check, __doc__ or "", severity=ERROR, category=FAILED)
