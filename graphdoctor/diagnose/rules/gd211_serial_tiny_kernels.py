"""A graph replays a long serial chain of tiny kernels: fusing them is the next saving.

A graph removes the CPU's launch cost, not the GPU's per-kernel cost: each kernel of a
chain still starts after the one before it ends, and a kernel of a few microseconds spends
much of them starting, reading its inputs from memory and writing its outputs back. When a
graph is one long chain (its longest dependency chain is nearly all its nodes) of kernels
that take a few microseconds each on average, its replay time is mostly that per-kernel
cost, which fusing the kernels (``torch.compile``, or a fused library kernel) removes.

How to fix: compile the captured function (``torch.compile``, whose
``mode="reduce-overhead"`` also captures the fused kernels in a graph), or use fused kernels
for the chain's elementwise steps; outside PyTorch, fuse them in your library's way (CuPy's
``cupy.fuse`` or an ``ElementwiseKernel``, one kernel of your own).
"""

from __future__ import annotations

from collections.abc import Iterator

from graphdoctor.diagnose import measure
from graphdoctor.diagnose.findings import INFO, WASTEFUL, Finding, Rule
from graphdoctor.diagnose.view import TraceView
from graphdoctor.trace import anatomy
from graphdoctor.trace.names import CUPTI_APIS, is_native_api

ID, NAME = "GD211", "serial-tiny-kernels"
MIN_KERNELS = 50
SERIAL = 0.9  # the longest chain's share of the nodes from which a graph is one chain
TINY_US = 5.0  # average GPU time per kernel in a replay
TORCH_FIX = ("Compile the captured function with torch.compile (mode=\"reduce-overhead\" keeps "
             "the graph), or use fused kernels for its elementwise steps.")
NATIVE_FIX = ("Fuse the chain's kernels into fewer, larger ones (one kernel doing a layer's "
              "steps), then capture those.")
OUTSIDE_TORCH_FIX = ("Fuse the chain's elementwise steps into fewer kernels (in CuPy: cupy.fuse "
                     "or an ElementwiseKernel), then capture those.")


def check(view: TraceView) -> Iterator[Finding]:
    for graph in view.manual_graphs():
        held = graph.anatomy
        replay = measure.of_graph(view, graph).replay
        if held is None or replay is None or held.kernel_count < MIN_KERNELS:
            continue
        per_kernel = replay.median_us / held.kernel_count
        if held.serial_share < SERIAL or per_kernel >= TINY_US:
            continue
        yield RULE.finding(
            title=f"graph {graph.id} is one chain of {held.kernel_count} kernels of "
                  f"{per_kernel:.1f} µs each: fusing them is the next saving",
            explanation=(f"Graph {graph.id} has {anatomy.summary(held)}; a replay takes "
                         f"{replay.median_us:,.1f} µs of GPU time (median of {replay.n}), "
                         f"{per_kernel:.1f} µs per kernel. Its largest kernel groups: "
                         f"{'; '.join(anatomy.top_kernels(held))}. Kernels this short in "
                         "a chain spend their time starting and moving data, which a graph "
                         "does not remove."),
            fix=NATIVE_FIX if is_native_api(graph.api) else
            OUTSIDE_TORCH_FIX if graph.api.startswith(CUPTI_APIS) else TORCH_FIX,
            location=view.location(graph.stack), graph=graph.id,
            measurements={"kernels": held.kernel_count, "longest_chain": held.longest_chain,
                          "replay_us": round(replay.median_us, 1),
                          "per_kernel_us": round(per_kernel, 2)})


RULE = Rule(ID, NAME, check, __doc__ or "", severity=INFO, category=WASTEFUL)
