"""The step is GPU-bound, so a graph cannot make it faster.

A CUDA graph removes the CPU cost of launching kernels one by one. When the kernels
themselves fill the step (a few large matmuls), the GPU is busy nearly all the time in
eager mode already and launch overhead is a tiny share: replaying a graph gives the same
step time. The numbers: the replay's GPU time over the eager step's GPU time estimates the
GPU-busy share (a replay runs the same kernels back to back); the eager call's CPU time is
the launch cost.

How to fix: nothing to fix in the graph; spend the effort on the kernels (torch.compile's
default or max-autotune mode, lower precision, fusion) and keep the memory a graph's
private pool costs.
"""

from __future__ import annotations

from collections.abc import Iterator

from graphdoctor.diagnose import measure
from graphdoctor.diagnose.findings import NEUTRAL, WARNING, Finding, Rule
from graphdoctor.diagnose.view import TraceView
from graphdoctor.trace import anatomy
from graphdoctor.units import format_speedup

ID, NAME = "GD201", "gpu-bound"
BUSY = 0.9
LAUNCH = 0.1


def check(view: TraceView) -> Iterator[Finding]:
    for graph in view.manual_graphs():
        m = measure.of_graph(view, graph)
        compared, launch, eager_host = m.compared, m.launch_share, m.eager_host
        if compared is None or launch is None or eager_host is None:
            continue
        busy, speedup = compared.busy_share, compared.speedup
        if speedup >= 1.1 or busy < BUSY or launch > LAUNCH:
            continue
        yield RULE.finding(
            title=f"graph {graph.id} gives {format_speedup(speedup)}: the GPU is busy "
                  f"{busy:.0%} of the eager step and launches cost {launch:.1%}",
            explanation=(f"In eager mode one step takes {compared.eager.median_us:,.0f} µs of GPU "
                         "time and its kernels alone take about "
                         f"{compared.replay.median_us:,.0f} µs (the replay); the CPU launches "
                         f"the step in {eager_host.median_us:,.0f} µs. "
                         "Launch overhead is too small a share for a graph to remove."
                         f"{anatomy.sentence(graph.anatomy)}"),
            fix="Keep the eager path (and the memory) or optimise the kernels themselves; a "
                "CUDA graph only removes launch overhead.",
            location=view.location(graph.stack), graph=graph.id, measurements=m.as_dict())


RULE = Rule(ID, NAME, check, __doc__ or "", severity=WARNING, category=NEUTRAL)
