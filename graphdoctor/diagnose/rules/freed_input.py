"""A tensor a graph reads was freed after capture, and the graph was replayed anyway.

A graph keeps the addresses its kernels read. Rebinding a captured input
(``x = torch.randn(...)`` instead of ``x.copy_(...)``) frees the old tensor; its memory goes
back to the allocator and is reused, and every later replay reads whatever lives there now.
Nothing raises: results are silently wrong or stale.

How to fix: keep every captured input alive as long as the graph, and feed new data with
``static_input.copy_(new)``.
"""

from __future__ import annotations

from collections.abc import Iterator

from graphdoctor.diagnose.findings import ERROR, UNSAFE, Finding, Rule
from graphdoctor.diagnose.view import TraceView, mib

ID, NAME = "GD302", "freed-captured-input"


def check(view: TraceView) -> Iterator[Finding]:
    for index, event in enumerate(view.trace.input_events):
        if event.kind != "freed":
            continue
        yield Finding(
            ID, NAME, ERROR, UNSAFE,
            title=f"graph {event.graph} reads a {mib(event.size)} tensor (used at "
                  f"{view.where(event.stack)}) that was freed after capture",
            explanation=(f"During capture, graph {event.graph} read a tensor at "
                         f"{view.where(event.stack)}. By replay {event.replays} that tensor had "
                         "been freed, so this replay and every later one read memory the "
                         "allocator may have given to something else."),
            fix="Keep captured inputs alive and update them in place: static_x.copy_(new_x).",
            evidence=(view.evidence("input_events", index),),
            location=view.location(event.stack), graph=event.graph,
            measurements={"bytes": event.size, "noticed_at_replay": event.replays})


RULE = Rule(ID, NAME, check, __doc__ or "")
