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

from graphdoctor.diagnose.model import NEUTRAL, WARNING, Finding, Rule
from graphdoctor.diagnose.view import TraceView
from graphdoctor.trace.model import REPLAY

ID, NAME = "GD203", "sync-between-replays"
SHARE = 0.5  # syncs per replay at which the CPU is in the loop


def check(view: TraceView) -> Iterator[Finding]:
    replays = view.trace.tables["replays"]
    if not len(replays):
        return
    syncs = view.user_syncs([(i, s) for i, s in view.rows("syncs") if s.phase == REPLAY])
    by_site: dict[tuple[str, int], list[int]] = {}
    for index, sync in syncs:
        frame = view.culprit_frame(sync.stack)
        if frame is not None:  # always so: user_syncs keeps only the syncs that have one
            by_site.setdefault((frame.file, frame.line), []).append(index)
    for indexes in by_site.values():
        if len(indexes) < SHARE * len(replays):
            continue
        first = view.trace.tables["syncs"][indexes[0]]
        yield Finding(
            ID, NAME, WARNING, NEUTRAL,
            title=f"{first.kind} at {view.where(first.stack)} syncs with the GPU "
                  f"{len(indexes)} times over {len(replays)} replays",
            explanation=(f"This line waits for the GPU {len(indexes) / len(replays):.1f} times "
                         "per replay, so the CPU cannot queue the next replay while the GPU "
                         "works: the GPU idles for the launch and Python overhead of every "
                         "step."),
            fix="Read values every N steps, or accumulate them on the GPU and read once.",
            evidence=tuple(view.evidence("syncs", i) for i in indexes[:50]),
            location=view.location(first.stack), measurements={"syncs": len(indexes),
                                                               "replays": len(replays)})


RULE = Rule(ID, NAME, check, __doc__ or "")
