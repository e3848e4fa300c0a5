"""A host sync between replays keeps the CPU waiting on every step.

Graphs pay off when the CPU queues work ahead of the GPU. A ``.item()``, ``.cpu()`` or
``torch.cuda.synchronize()`` after each replay (loss logging, an early-stop check) makes the
CPU wait for the GPU to finish every step, so the next replay is launched late and the GPU
idles between steps.

How to fix: keep metrics on the GPU and read them every N steps, or copy them out with
``non_blocking=True`` into pinned memory and read them a step later.
"""

from __future__ import annotations

from collections.abc import Iterator

from graphdoctor.diagnose.findings import NEUTRAL, WARNING, Finding, Rule
from graphdoctor.diagnose.view import TraceView
from graphdoctor.facts import queries

ID, NAME = "GD203", "sync-between-replays"
SHARE = 0.5  # syncs per replay at which the CPU is in the loop


def check(view: TraceView) -> Iterator[Finding]:
    """A finding per line of the user's code that synced between replays at least once every
    other replay (syncs between replays: :func:`.queries.syncs_between_any_replays`, the
    count the viewer's eager-beside-replay picture shows too)."""
    replays = len(view.trace.tables["replays"])
    if not replays:
        return
    between = queries.syncs_between_any_replays(view.trace)
    for indexes in queries.syncs_by_line(view.trace, between).values():
        if len(indexes) >= SHARE * replays:
            yield _finding(view, indexes, replays)


def _finding(view: TraceView, indexes: list[int], replays: int) -> Finding:
    first = view.trace.tables["syncs"][indexes[0]]
    return RULE.finding(
        title=f"{first.kind} at {view.where(first.stack)} syncs with the GPU "
              f"{len(indexes)} times over {replays} replays",
        explanation=(f"This line waits for the GPU {len(indexes) / replays:.1f} times per "
                     "replay, so the CPU cannot queue the next replay while the GPU works: "
                     "the GPU idles for the launch and Python overhead of every step."),
        fix="Read values every N steps, or accumulate them on the GPU and read once.",
        evidence=tuple(view.evidence("syncs", i) for i in indexes[:50]),
        location=view.location(first.stack),
        measurements={"syncs": len(indexes), "replays": replays})


RULE = Rule(ID, NAME, check, __doc__ or "", severity=WARNING, category=NEUTRAL)
