"""A host-bound replay loop: a graph of one small kernel (64x64 tanh) replayed in blocks of
5,000, so the host's time per replay is launch overhead and any hook on graph launches shows
in it. The step time is the median of 7 blocks (one block alone moves by a microsecond).

The hook's own cost is also measured inside the one process, where the noise between runs
(plain runs on one H200 host took 2.6 or 4.6 µs per replay, run to run) does not reach it:
blocks with graphdoctor's wrapper of ``CUDAGraph.replay`` alternate with blocks with the
replay it wraps put back (:func:`_common.hook_cost`; nothing is wrapped in a plain run, where
the difference is the control), and ``hook_us`` is the median over 7 pairs of the
difference per replay.

``BENCH_PROFILE=FILE``: one more block under cProfile, its 25 costliest functions written to
FILE (where a hook's time goes; cProfile's own cost inflates every Python call)."""
import os

import torch
from _common import emit, hook_cost, median_of_blocks, profile_block, warm_and_capture

x = torch.randn(64, 64, device="cuda")
graph, _ = warm_and_capture(torch.tanh, x)
for _ in range(20):
    graph.replay()
result = median_of_blocks(graph.replay, 5000, blocks=7)
replay_owner = next(k for k in type(graph).__mro__ if "replay" in k.__dict__)
# looked up at each call, so that the blocks without the wrapper replay without it
emit({**result, **hook_cost(lambda: graph.replay(), 5000, 7, [(replay_owner, "replay")])})
if os.environ.get("BENCH_PROFILE"):
    profile_block(graph.replay, 5000, os.environ["BENCH_PROFILE"])
