"""The graph holds too little work for its launch savings to matter.

Replaying a graph costs one launch (plus, under torch.compile's CUDAGraph Trees, Python
bookkeeping for inputs and outputs) instead of one launch per kernel. A graph of one or two
small kernels saves a few microseconds per step, which other per-step costs swamp; under
reduce-overhead the bookkeeping can even make the step slower.

Found two ways: the measured saving per step is under :data:`SAVING_US`, or the graph holds
at most :data:`FEW_KERNELS` kernels that run in under :data:`SAVING_US` a replay (its anatomy,
where the driver could be asked). The second holds where the eager figure is inflated: an
eager call timed alone pays its launch latency, and graphdoctor's own timing of it, which
the replay does not, so a one-kernel step can seem to save more than it does.

How to fix: capture a larger region (a whole layer stack or decode step), or leave tiny
functions uncaptured (``torch.compile`` default mode).
"""

from __future__ import annotations

from collections.abc import Iterator

from graphdoctor.diagnose import measure
from graphdoctor.diagnose.findings import NEUTRAL, WARNING, Finding, Rule
from graphdoctor.diagnose.view import TraceView
from graphdoctor.trace import anatomy
from graphdoctor.trace.model import Graph

ID, NAME = "GD202", "too-little-work-per-graph"
SAVING_US = 10.0
LAUNCH_US = 50.0  # CPU time to launch the eager step
FEW_KERNELS = 2


def check(view: TraceView) -> Iterator[Finding]:
    for graph in view.manual_graphs():
        m = measure.of_graph(view, graph)
        compared = m.compared
        if compared is None:
            continue
        eager, replay = compared.eager, compared.replay
        saving = eager.median_us - replay.median_us
        launching = m.eager_host.median_us if m.eager_host else 0.0
        if launching >= LAUNCH_US or (saving >= SAVING_US and not _few_kernels(graph, replay)):
            continue  # a large saving of real work, or a step whose launch work is not small
        yield RULE.finding(
            title=_title(graph, saving),
            explanation=(f"An eager step takes {eager.median_us:.1f} µs and a replay "
                         f"{replay.median_us:.1f} µs (GPU time, median of {replay.n} "
                         f"{'runs of back-to-back replays' if m.replay_lone else 'replays'}); "
                         f"the CPU launches the eager step in {launching:.1f} µs. The "
                         "captured step launches so little work that one graph launch saves "
                         f"only a few microseconds.{anatomy.sentence(graph.anatomy)}"),
            fix="Capture a larger part of the step, or do not capture this one.",
            location=view.location(graph.stack), graph=graph.id, measurements=m.as_dict())


def _title(graph: Graph, saving: float) -> str:
    if saving < SAVING_US or graph.anatomy is None:
        return f"graph {graph.id} saves {saving:.1f} µs per step: too little work per graph"
    count = graph.anatomy.kernel_count
    return (f"graph {graph.id} holds {count} kernel{'s' if count > 1 else ''}: too little work "
            "per graph")


def _few_kernels(graph: Graph, replay: measure.Stat) -> bool:
    held = graph.anatomy
    return held is not None and 0 < held.kernel_count <= FEW_KERNELS \
        and replay.median_us < SAVING_US


RULE = Rule(ID, NAME, check, __doc__ or "", severity=WARNING, category=NEUTRAL)
