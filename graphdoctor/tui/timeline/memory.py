"""How many bytes the caching allocator had allocated over the run, for any stretch of it,
cheaply. Allocated, not reserved: the ``memory`` table keeps both, and the curve starts from
its ``allocated`` column and moves with allocations and completed frees, never with segments.

The recorder samples the allocator's totals now and then (the ``memory`` table) and records
single allocations and frees in between (``allocs``; in captures by default, everywhere with
``--full``). The curve is the last sample moved by every allocation and completed free since,
which is exact where both were recorded and a step where only samples were. The peak of any
stretch comes from prefix sums and per-block maxima, so no redraw walks every allocation.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from functools import cached_property
from itertools import accumulate, pairwise, repeat

BLOCK = 512  # allocations per precomputed maximum
SIGN = {"alloc": 1, "free_completed": -1}
FLAT_COLUMNS = 64  # how finely flat() reads the curve
FLAT_SHARE = 0.02  # a curve that moves less than this share of its high is flat


class MemoryCurve:
    """Bytes allocated (not reserved) as a function of time, built from the samples'
    ``allocated`` column and allocator events."""

    def __init__(self, sample_times: Sequence[int], sample_bytes: Sequence[int],
                 alloc_times: Sequence[int], alloc_deltas: Sequence[int] | map[int]):
        self.sample_times = sample_times
        self.alloc_times = alloc_times
        self.net = list(accumulate(alloc_deltas, initial=0))
        self.block_peaks = [max(self.net[i:i + BLOCK]) for i in range(0, len(self.net), BLOCK)]
        self.bases = [value - self.net[bisect_right(alloc_times, t)]
                      for t, value in zip(sample_times, sample_bytes, strict=True)]
        # Without samples, the lowest point of the recorded allocations counts as zero.
        self.start_base = self.bases[0] if self.bases else -min(self.net)
        firsts = [times[0] for times in (sample_times, alloc_times) if len(times)]
        self.first = min(firsts) if firsts else None

    @classmethod
    def from_columns(cls, sample_times: Sequence[int], sample_bytes: Sequence[int],
                     alloc_times: Sequence[int], actions: Sequence[str],
                     sizes: Sequence[int]) -> MemoryCurve:
        deltas = map(int.__mul__, map(SIGN.get, actions, repeat(0)), sizes)
        return cls(sample_times, sample_bytes, alloc_times, deltas)

    def __bool__(self) -> bool:
        return self.first is not None

    def shift(self, offset: int) -> None:
        """Every time moved by ``offset`` ns: the curve's shape is unchanged."""
        self.sample_times = [t + offset for t in self.sample_times]
        self.alloc_times = [t + offset for t in self.alloc_times]
        self.first = None if self.first is None else self.first + offset

    def flat(self, end: int) -> bool:
        """Whether the curve stays within FLAT_SHARE of its high from its start to ``end``,
        read at FLAT_COLUMNS columns (cheap: each column is a few bisections)."""
        if self.first is None or end <= self.first:
            return True
        step = max((end - self.first) // FLAT_COLUMNS, 1)
        peaks = [p for p in self.peaks(range(self.first, end + step, step)) if p is not None]
        high = max(peaks, default=0)
        return high <= 0 or (high - min(peaks)) <= FLAT_SHARE * high

    def value_at(self, t: int) -> int | None:
        if self.first is None or t < self.first:
            return None
        return self._base(t) + self.net[bisect_right(self.alloc_times, t)]

    def peaks(self, edges: Sequence[int]) -> list[int | None]:
        """The highest value in each column between consecutive ``edges``."""
        return [self.peak(start, end) for start, end in pairwise(edges)]

    def peak(self, start: int, end: int) -> int | None:
        """The highest value in [start, end); None before anything was recorded."""
        if self.first is None or end <= self.first:
            return None
        start = max(start, self.first)
        samples = self.sample_times
        first, stop = bisect_right(samples, start), bisect_left(samples, end)
        if stop <= first:  # no sample inside: one base throughout
            return self._segment_peak(start, end)
        ends = max(self._segment_peak(start, samples[first]),
                   self._segment_peak(samples[stop - 1], end))
        between = self._sample_peaks[first:stop - 1]  # whole stretches from sample to sample
        return max(ends, max(between)) if between else ends

    @cached_property
    def _sample_peaks(self) -> list[int]:
        """The peak between each sample and the next, so a wide column reads them at once."""
        return [self._segment_peak(a, b) for a, b in pairwise(self.sample_times)]

    def _segment_peak(self, start: int, end: int) -> int:
        """Peak of a stretch with no sample inside it, so one base applies throughout."""
        first = bisect_right(self.alloc_times, start)
        last = bisect_left(self.alloc_times, end)
        return self._base(start) + self._highest(first, last)

    def _base(self, t: int) -> int:
        index = bisect_right(self.sample_times, t) - 1
        return self.bases[index] if index >= 0 else self.start_base

    def _highest(self, first: int, last: int) -> int:
        """max(net[first..last]), both ends included."""
        if last - first < 2 * BLOCK:
            return max(self.net[first:last + 1])
        head_end = -(-first // BLOCK) * BLOCK
        tail_start = (last + 1) // BLOCK * BLOCK
        parts = [max(self.block_peaks[head_end // BLOCK:tail_start // BLOCK])]
        if first < head_end:
            parts.append(max(self.net[first:head_end]))
        if tail_start <= last:
            parts.append(max(self.net[tail_start:last + 1]))
        return max(parts)
