"""What one replay costs a loop of replays issued back to back, on the GPU.

A lone replay's pair of CUDA events measures from the host's recording of the first to the
end of the graph's work: in a loop of small graphs that holds the launch latency which the
loop itself hides, since the next replay is launched while this one runs (a one-kernel graph
replayed in a loop: 4.2 µs a replay by the loop's own timing, 8.1 µs by its lone pairs, on
an H200). The recorder also writes, between two timed replays of a graph on one stream, the
GPU time from the end of the one to the end of the other (``ReplaySpan``). Where every
replay in between was issued back to back on one thread, each starting within
:data:`BACK_TO_BACK_NS` of the last one's end on the host (so the host launched nothing else
in between), that span over the replays in it is what a replay costs the loop: the GPU's own
time per replay where the GPU is the bottleneck, the launch pace where the host is. Spans
with other host work between replays, or with fewer than :data:`MIN_REPLAYS` replays, are
left out. Imports nothing of torch.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence

BACK_TO_BACK_NS = 2_000  # the host's gap between replays a loop of nothing else leaves
MIN_REPLAYS = 8  # replays a span must hold (fewer: a lone replay's latency still shows)
# a gap a little longer now and then is the interpreter's own (a new pool of small objects
# for the replay log's numbers every 64 replays or so), not work the host did in between
HICCUP_NS = 10_000
HICCUPS_PER_GAP = 1 / 16


def paces(spans: Sequence[tuple[int, int, int]], starts: Sequence[int], ends: Sequence[int],
          threads: Sequence[int]) -> tuple[int, ...]:
    """GPU ns per replay over each back-to-back span of one graph; ``starts``, ``ends`` and
    ``threads``: that graph's replays on the host, in order of start."""
    found = []
    for t_from, t_to, gpu in spans:
        first, last = bisect_left(starts, t_from), bisect_right(starts, t_to)
        replays = last - first - 1  # the span runs from the first one's end to the last's
        if replays >= MIN_REPLAYS and _back_to_back(starts, ends, threads, first, last):
            found.append(gpu // replays)
    return tuple(found)


def _back_to_back(starts: Sequence[int], ends: Sequence[int], threads: Sequence[int],
                  first: int, last: int) -> bool:
    """One thread, and no gap between untimed replays; the gaps after the first timed one
    and before the last hold graphdoctor's own work on their events, not the script's."""
    thread = threads[first]
    if not all(threads[i] == thread for i in range(first, last)):
        return False
    gaps = [starts[i] - ends[i - 1] for i in range(first + 2, last - 1)]
    longer = [gap for gap in gaps if gap > BACK_TO_BACK_NS]
    return all(gap <= HICCUP_NS for gap in longer) and len(longer) <= HICCUPS_PER_GAP * len(gaps)


LOOP_GAPS_FROM = 8  # replays of a graph on one thread before the host's gaps say a pace


def host_gaps(starts: Sequence[int], threads: Sequence[int]) -> list[int]:
    """The host time from each replay's start to the next one's, on one thread, in order of
    start: what a loop around the replays spends a step, its own work between them
    included (a graph replayed in a loop that also feeds it is paced by that work, not by
    the graph). A pause longer than ten times the median step (the script doing something
    else) is not a step of the loop."""
    gaps = [b - a for a, b, ta, tb in zip(starts, starts[1:], threads, threads[1:]) if ta == tb]
    if len(gaps) + 1 < LOOP_GAPS_FROM:
        return []
    ordered = sorted(gaps)
    limit = 10 * ordered[len(ordered) // 2]
    return [gap for gap in gaps if gap <= limit]
