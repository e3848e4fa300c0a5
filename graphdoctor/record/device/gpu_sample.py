"""Which replays and eager calls have their GPU time taken.

A pair of CUDA events costs several microseconds of host time, more than a tiny replay or a
small eager call takes itself, so timing each one made the very loops CUDA graphs are for
several times slower (and the script's own timing of them wrong). GPU time is taken for each
graph's or function's first :data:`TIMED_FIRST`, then for one in :data:`TIMED_EVERY` once
:data:`TIMED_GAP_NS` has passed since the last timed one, and for one whenever
:data:`TIMED_MAX_GAP_NS` has (a slow loop is still sampled a few times a second). A gap of
time alone made every call of a step slower than the gap a timed one, and the timing itself
made a step slower: a decode loop of 360 µs tokens ran at 1,430 µs under the recorder, every
token timed twice. Host time is still taken for every one. Imports no torch.
"""

from __future__ import annotations

import time

TIMED_FIRST = 16  # each graph's or function's first ones, all timed on the GPU
TIMED_EVERY = 64  # then at most one in this many
TIMED_GAP_NS = 1_000_000  # and not before this long has passed since the last timed one
TIMED_MAX_GAP_NS = 250_000_000  # but one whenever this long has, however few came between


def next_due(timed_at: int, previous_at: int, calls_between: int) -> int:
    """When the next one may be timed (perf_counter ns), after one timed at ``timed_at``
    whose timed predecessor was at ``previous_at``, ``calls_between`` calls earlier: once
    :data:`TIMED_EVERY` calls at the pace between the two have gone by (at most
    :data:`TIMED_MAX_GAP_NS`), and never before :data:`TIMED_GAP_NS`. The replay path's fast
    lane compares one clock reading with it, and counts nothing."""
    pace = (timed_at - previous_at) // max(calls_between, 1) if previous_at else 0
    return timed_at + max(TIMED_GAP_NS, min(TIMED_EVERY * pace, TIMED_MAX_GAP_NS))


def sampled_note(what: str) -> str:
    """The recording's note on ``what`` ("replays", "eager calls") once some went untimed."""
    return (f"taken for a sample of {what}: each one's first {TIMED_FIRST}, then about one in "
            f"{TIMED_EVERY} (at least {TIMED_GAP_NS // 1_000_000} ms apart, at most "
            f"{TIMED_MAX_GAP_NS // 1_000_000} ms); every one's host time is kept")


class GpuSample:
    """The sampling for one kind of event, by key (a function): :meth:`due` says whether
    the one starting now is timed. The replay path inlines the same test, for speed."""

    def __init__(self) -> None:
        self._counts: dict[int, int] = {}
        # key -> (perf_counter ns its next may be timed, of its last timed one, its count then)
        self._due: dict[int, tuple[int, int, int]] = {}
        self.skipped = 0

    def due(self, key: int) -> bool:
        count = self._counts.get(key, 0) + 1
        self._counts[key] = count
        now = time.perf_counter_ns()
        due, last, last_count = self._due.get(key, (0, 0, 0))
        if count <= TIMED_FIRST or now >= due:
            self._due[key] = (next_due(now, last, count - last_count), now, count)
            return True
        self.skipped += 1
        return False

    def due_at(self, key: int) -> int:
        """When ``key``'s next one may be timed (perf_counter ns): 0 while its first are."""
        if self._counts.get(key, 0) < TIMED_FIRST:
            return 0
        return self._due.get(key, (0, 0, 0))[0]
