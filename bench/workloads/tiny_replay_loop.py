"""A host-bound replay loop: a graph of one small kernel (64x64 tanh) replayed in blocks of
5,000, so the host's time per replay is launch overhead and any hook on graph launches shows
in it. The step time is the median of 7 blocks (one block alone moves by a microsecond).

The hook's own cost is also measured inside the one process, where the noise between runs
(plain runs on one H200 host took 2.6 or 4.6 µs per replay, run to run) does not reach it:
blocks through ``graph.replay`` alternate with blocks that call the replay graphdoctor wraps
(``__wrapped__``; the same function in a plain run, where the difference is the control),
and ``hook_us`` is the median over 7 pairs of the difference per replay.

``BENCH_PROFILE=FILE``: one more block under cProfile, its 25 costliest functions written to
FILE (where a hook's time goes; cProfile's own cost inflates every Python call)."""
import functools
import os
import statistics

import torch
from _common import emit, median_of_blocks, profile_block, timed_loop, warm_and_capture

x = torch.randn(64, 64, device="cuda")
graph, _ = warm_and_capture(torch.tanh, x)
for _ in range(20):
    graph.replay()
result = median_of_blocks(graph.replay, 5000, blocks=7)
unhooked = functools.partial(getattr(type(graph).replay, "__wrapped__", type(graph).replay), graph)
bodies = {"hooked": graph.replay, "unhooked": unhooked}
pairs = []
for pair in range(7):
    order = ("unhooked", "hooked") if pair % 2 == 0 else ("hooked", "unhooked")
    took = {name: timed_loop(bodies[name], 5000)["host_us_per_step"] for name in order}
    pairs.append(took["hooked"] - took["unhooked"])
emit({**result, "hook_us": statistics.median(pairs), "hook_us_pairs": [round(p, 3) for p in pairs]})
if os.environ.get("BENCH_PROFILE"):
    profile_block(graph.replay, 5000, os.environ["BENCH_PROFILE"])
