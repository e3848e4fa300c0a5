"""Memory grows across replays.

A replay allocates nothing: its memory was reserved at capture. Allocated memory that keeps
growing while graphs replay comes from the code around them, typically outputs kept in a
list (``history.append(out.clone())``) or a cache that is never trimmed. It ends in an
out-of-memory error long after the cause.

How to fix: keep only what you need across steps (``.item()`` it every N steps, or
``.cpu()`` in batches), or overwrite a preallocated buffer. With ``graphdoctor run --full``
every allocation is recorded with its stack, and the finding names the line whose
allocations were kept.
"""

from __future__ import annotations

from collections.abc import Iterator

from graphdoctor.diagnose.findings import WARNING, WASTEFUL, Finding, Rule
from graphdoctor.diagnose.view import TraceView, mib
from graphdoctor.trace.model import REPLAY
from graphdoctor.trace.names import ALLOC_ACTION

ID, NAME = "GD304", "memory-growth-across-replays"
MIN_GROWTH = 64 * 2**20
MIN_SAMPLES = 4


def check(view: TraceView) -> Iterator[Finding]:
    samples = [(i, m) for i, m in view.rows("memory") if m.phase == REPLAY]
    if len(samples) < MIN_SAMPLES:
        return
    allocated = [m.allocated for _, m in samples]
    growth = allocated[-1] - allocated[0]
    rising = sum(1 for a, b in zip(allocated, allocated[1:]) if b >= a)
    if growth < MIN_GROWTH or rising < 0.75 * (len(allocated) - 1):
        return
    first, last = samples[0][1], samples[-1][1]
    replays = sum(1 for r in view.trace.tables["replays"] if first.t <= r.t <= last.t)
    per_replay = growth / replays if replays else 0
    site, kept = _largest_kept_site(view, first.t, last.t)
    yield RULE.finding(
        title=f"allocated memory grew by {mib(growth)} over {replays} replays "
              f"({mib(int(per_replay))} per replay)",
        explanation=(f"While graphs replayed, allocated memory rose from {mib(first.allocated)} "
                     f"to {mib(last.allocated)} in {len(samples)} samples. Replays allocate "
                     "nothing, so the code between them keeps tensors alive."),
        fix=("Find what the loop keeps across steps (lists of outputs, caches) and drop or "
             "preallocate it." + ("" if site is not None else " Run with --full to record "
                                  "every allocation's stack and name the line.")),
        evidence=tuple(view.evidence("memory", i) for i, _ in samples),
        location=view.location(site) if site is not None else None,
        measurements={"growth_bytes": growth, "replays": replays, "samples": len(samples),
                      **({"largest_site_bytes": kept} if site is not None else {})})


def _largest_kept_site(view: TraceView, start: int, end: int) -> tuple[int | None, int]:
    """(stack, bytes) of the call site whose allocations in the window were never freed
    there, when allocations were recorded with stacks (--full); (None, 0) otherwise."""
    live: dict[int, tuple[int, int]] = {}  # addr -> (stack, size)
    for alloc in view.trace.tables["allocs"]:
        if not start <= alloc.t <= end:
            continue
        if alloc.action == ALLOC_ACTION and alloc.stack >= 0:
            live[alloc.addr] = (alloc.stack, alloc.size)
        elif alloc.action in ("free_requested", "free_completed"):
            live.pop(alloc.addr, None)
    by_site: dict[int, int] = {}
    for stack, size in live.values():
        by_site[stack] = by_site.get(stack, 0) + size
    if not by_site:
        return (None, 0)
    stack = max(by_site, key=by_site.__getitem__)
    return (stack, by_site[stack])


RULE = Rule(ID, NAME, check, __doc__ or "", severity=WARNING, category=WASTEFUL)
