"""Which replays and eager calls have their GPU time taken.

A pair of CUDA events costs several microseconds of host time, more than a tiny replay or a
small eager call takes itself, so timing each one made the very loops CUDA graphs are for
several times slower (and the script's own timing of them wrong). GPU time is taken for each
graph's or function's first :data:`TIMED_FIRST`, then for one whenever :data:`TIMED_GAP_NS`
has passed since its last timed one: every one where each takes a millisecond or more, one
in a few hundred in a loop of microsecond ones. Host time is still taken for every one.
Imports no torch.
"""

from __future__ import annotations

import time

TIMED_FIRST = 16  # each graph's or function's first ones, all timed on the GPU
TIMED_GAP_NS = 1_000_000  # then one, whenever this long has passed since the last timed one


def sampled_note(what: str) -> str:
    """The recording's note on ``what`` ("replays", "eager calls") once some went untimed."""
    return (f"taken for a sample of {what}: each one's first {TIMED_FIRST}, then one whenever "
            f"{TIMED_GAP_NS // 1_000_000} ms had passed since the last timed one; every one's "
            "host time is kept")


class GpuSample:
    """The sampling for one kind of event, by key (a function): :meth:`due` says whether
    the one starting now is timed. The replay path inlines the same test, for speed."""

    def __init__(self) -> None:
        self._counts: dict[int, int] = {}
        self._last: dict[int, int] = {}  # key -> perf_counter ns of its last timed one
        self.skipped = 0

    def due(self, key: int) -> bool:
        count = self._counts.get(key, 0) + 1
        self._counts[key] = count
        now = time.perf_counter_ns()
        if count <= TIMED_FIRST or now - self._last.get(key, 0) >= TIMED_GAP_NS:
            self._last[key] = now
            return True
        self.skipped += 1
        return False
