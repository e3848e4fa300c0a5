"""A capture on one device that touches tensors on another.

A capture records the work of one device's capturing stream. When the current device is
cuda:0 but the tensors live on cuda:1 (or the reverse), the work lands on a stream that is
not being captured: CUDA fails with "operation not permitted when stream is capturing", or
the graph comes out empty.

How to fix: make the tensors' device current for warmup and capture
(``with torch.cuda.device(dev):`` or ``torch.cuda.set_device(dev)``), and create the capture
stream on that device.
"""

from __future__ import annotations

from collections.abc import Iterator

from graphdoctor.diagnose.failures import cause_of
from graphdoctor.diagnose.findings import ERROR, FAILED, UNSAFE, Finding, Rule
from graphdoctor.diagnose.view import TraceView
from graphdoctor.trace.names import CAPTURED

ID, NAME = "GD107", "other-device-in-capture"


def check(view: TraceView) -> Iterator[Finding]:
    for graph in view.graphs:
        elsewhere = [(i, a) for i, a in view.in_capture("allocs", graph)
                     if a.device != graph.device]
        cause = cause_of(view, graph)
        link = cause.link if cause is not None and cause.kind == "other_device" else None
        stack = elsewhere[0][1].stack if elsewhere else link.stack if link else None
        if stack is None:
            continue
        devices = sorted({a.device for _, a in elsewhere}) or ["another device"]
        yield RULE.finding(
            category=FAILED if graph.status != CAPTURED else UNSAFE,
            title=f"graph {graph.id} is captured on cuda:{graph.device} but works on "
                  f"{', '.join(f'cuda:{d}' if isinstance(d, int) else d for d in devices)}",
            explanation=f"The capture of graph {graph.id} ran on cuda:{graph.device}, while work "
                        + (f"inside the captured block ({view.where(stack)} begins it) used "
                           "memory on another device, which this capture cannot record. The "
                           "default mode places a capture's allocations at its own line; "
                           "`graphdoctor run --full` names the line of each."
                           if stack == graph.stack else
                           f"at {view.where(stack)} used memory on another device, which this "
                           "capture cannot record."),
            fix="Make the tensors' device current around warmup and capture "
                "(with torch.cuda.device(...)).",
            evidence=tuple(view.evidence("allocs", i) for i, _ in elsewhere[:20]),
            location=view.location(stack), graph=graph.id)


RULE = Rule(ID, NAME, check, __doc__ or "", severity=ERROR, category=FAILED)
