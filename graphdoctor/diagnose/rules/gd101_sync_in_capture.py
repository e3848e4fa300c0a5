"""A host sync inside a capture invalidates it.

While a stream is being captured, nothing may wait for the GPU: ``.item()``, ``.tolist()``,
``.cpu()``, ``print(tensor)``, ``if tensor:``, ``torch.nonzero`` and boolean-mask indexing,
and ``torch.cuda.synchronize()`` all do. CUDA fails the call with "operation not permitted
when stream is capturing" at your line, and ``capture_end`` then raises "operation failed
due to a previous error during capture", which is the error you see.

How to fix: move the read out of the captured step, or keep the value on the GPU
(``torch.where``, 0-d tensors, ``torch.cond``); pad data-dependent shapes to static ones.
"""

from __future__ import annotations

from collections.abc import Iterator

from graphdoctor.diagnose.failures import failures_of_kind, known_fix
from graphdoctor.diagnose.findings import ERROR, FAILED, Finding, Rule
from graphdoctor.diagnose.view import TraceView
from graphdoctor.trace.names import NATIVE_SYNC_CALLS, is_native_api

ID, NAME = "GD101", "sync-in-capture"
FIX = ("Move this read out of the captured step, or keep the value on the GPU (torch.where, a "
       "0-d tensor) so nothing waits for it.")
NATIVE_FIX = ("Move this call out of the captured code (after cudaStreamEndCapture, or between "
              "graph launches), or keep the value on the GPU for the kernels that need it.")
CALLS = {"item": "`.item()`", "tolist": "`.tolist()`", "numpy": "`.numpy()`",
         "cpu": "a copy to the CPU", "print": "printing a CUDA tensor",
         "nonzero": "a data-dependent shape (nonzero)", "bool-mask index": "boolean-mask indexing",
         "python scalar": "a Python scalar read",
         "device_synchronize": "`torch.cuda.synchronize()`",
         "stream_synchronize": "`Stream.synchronize()`",
         "event_synchronize": "`Event.synchronize()`", "event_query": "`Event.query()`",
         "stream_query": "`Stream.query()`"}


def check(view: TraceView) -> Iterator[Finding]:
    for graph, cause in failures_of_kind(view, "sync"):
        syncs = view.user_syncs(view.in_capture("syncs", graph))
        stack = syncs[0][1].stack if syncs else cause.link.stack
        known = None if syncs else known_fix(view, cause.link)
        calls = NATIVE_SYNC_CALLS if is_native_api(graph.api) else CALLS
        what = calls.get(syncs[0][1].kind, "a synchronizing call") if syncs else \
            (known.what if known else "an operation that is not permitted while capturing")
        yield RULE.finding(
            title=(f"{what}: at {view.where(stack)}, inside the capture of graph {graph.id}"
                   if known else f"{what} at {view.where(stack)} waits for the GPU inside the "
                   f"capture of graph {graph.id}"),
            explanation=(f"{what} synchronizes with the GPU, which CUDA forbids while a stream is "
                         "being captured: CUDA failed it with \"operation not permitted when "
                         "stream is capturing\", and capture_end then reported the capture as "
                         "invalidated."),
            fix=known.fix if known else NATIVE_FIX if is_native_api(graph.api) else FIX,
            evidence=tuple(view.evidence("syncs", i) for i, _ in syncs)
            + ((view.evidence("exceptions", cause.exception),) if cause.exception >= 0 else ()),
            location=view.location(stack), graph=graph.id)


RULE = Rule(ID, NAME, check, __doc__ or "", severity=ERROR, category=FAILED)
