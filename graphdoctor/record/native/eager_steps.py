"""The eager side of a native program's graphs: the same kernels, launched without a graph.

A Python script's graph is compared with the functions its capture called, run eagerly. A
native program has no such functions to watch, but CUPTI sees each kernel it launches
outside a graph. Where the program runs a graph's kernels eagerly too, in the graph's
order (a warm-up, or an eager loop timed first, as the CUDA samples and the tutorials do),
each such run is one eager step of that graph: from its first kernel's start to its last
kernel's end on the GPU, which is also how a launch of the graph is timed (the span of its
kernels). So both sides count the gaps between kernels, which is what a graph removes;
neither side's host time is known.

A graph whose kernels were never run eagerly in that order gets no eager figure, and its
verdict says it was not measured rather than guessing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from graphdoctor.trace.anatomy import KernelGroup
from graphdoctor.trace.event_kinds import NONE

MIN_KERNELS = 1  # a graph of fewer kernels has no eager step to find


def kernel_order(found: dict[str, Any]) -> list[str]:
    """A graph's kernel group names in node order (capture order, for a stream capture),
    from its anatomy's JSON form; [] where its nodes were not kept."""
    groups = [KernelGroup(str(g[0]), int(g[1])) for g in found.get("kernels") or []]
    order = [int(k) for k in found.get("node_kernel") or []]
    return [groups[k].name for k in order if k != NONE and 0 <= k < len(groups)]


def eager_steps(order: Sequence[str], names: Sequence[str], starts: Sequence[int],
                ends: Sequence[int]) -> list[tuple[int, int]]:
    """(start, GPU span) of each run of ``order`` among the eager kernels (``names``, with
    ``starts`` and ``ends``, in time order), the runs not overlapping."""
    if len(order) < MIN_KERNELS:
        return []
    found: list[tuple[int, int]] = []
    length, index = len(order), 0
    while index + length <= len(names):
        if names[index] == order[0] and list(names[index:index + length]) == list(order):
            last = max(ends[index:index + length])
            found.append((starts[index], last - starts[index]))
            index += length
        else:
            index += 1
    return found
