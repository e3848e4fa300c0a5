"""The graph holds too little work for its launch savings to matter.

Replaying a graph costs one launch (plus, under torch.compile's CUDAGraph Trees, Python
bookkeeping for inputs and outputs) instead of one launch per kernel. A graph of one or two
small kernels saves a few microseconds per step, which other per-step costs swamp; under
reduce-overhead the bookkeeping can even make the step slower.

How to fix: capture a larger region (a whole layer stack or decode step), or leave tiny
functions uncaptured (``torch.compile`` default mode).
"""

from __future__ import annotations

from collections.abc import Iterator

from graphdoctor.diagnose import measure
from graphdoctor.diagnose.findings import NEUTRAL, WARNING, Finding, Rule
from graphdoctor.diagnose.view import TraceView
from graphdoctor.trace import anatomy

ID, NAME = "GD202", "too-little-work-per-graph"
SAVING_US = 10.0
LAUNCH_US = 50.0  # CPU time to launch the eager step


def check(view: TraceView) -> Iterator[Finding]:
    for graph in view.manual_graphs():
        m = measure.of_graph(view, graph)
        compared = m.compared
        if compared is None:
            continue
        eager, replay = compared.eager, compared.replay
        saving = eager.median_us - replay.median_us
        launching = m.eager_host.median_us if m.eager_host else 0.0
        if saving >= SAVING_US or launching >= LAUNCH_US:
            continue  # a large saving, or a step whose launch work is not small
        yield Finding(
            ID, NAME, WARNING, NEUTRAL,
            title=f"graph {graph.id} saves {saving:.1f} µs per step: too little work per graph",
            explanation=(f"An eager step takes {eager.median_us:.1f} µs and a replay "
                         f"{replay.median_us:.1f} µs (GPU time, median of {replay.n} "
                         f"replays); the CPU launches the eager step in {launching:.1f} µs. The "
                         "captured step launches so little work that one graph launch saves "
                         f"only a few microseconds.{anatomy.sentence(graph.anatomy)}"),
            fix="Capture a larger part of the step, or do not capture this one.",
            location=view.location(graph.stack), graph=graph.id, measurements=m.as_dict())


RULE = Rule(ID, NAME, check, __doc__ or "")
