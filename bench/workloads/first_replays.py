"""What each of a graph's first replays costs the host: the replays a program makes right
after capturing, where graphdoctor times every one and settles its periodic work. A program
that races two graphs on two streams (PyTorch's own test_graph_concurrent_replay) relies on
the second replay being launched while the first still runs; a slow first replay orders them.

Prints ``replay_host_us``, the host time of each of the first 40 replays of a graph of 30
small kernels (1M floats), each timed alone after a sync, and ``gap_us``, the host time from
one replay's launch to the next's in a pair issued back to back on two streams.
``BENCH_PROFILE=FILE``: a further graph's first 16 replays under cProfile, the costliest
functions to FILE."""
import os
import time

import torch
from _common import emit


def func_with_temps(t, val):
    x = t.clone() + val
    y = t.clone() + val
    return x + y


a = torch.ones((1_000_000,), device="cuda")
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
graphs, outs = [], []
with torch.cuda.stream(side):
    for _ in range(2):
        graph = torch.cuda.CUDAGraph()
        graph.capture_begin()
        b = a.clone()
        for _ in range(5):
            b = func_with_temps(b, 1)
        graph.capture_end()
        graphs.append(graph)
        outs.append(b)
torch.cuda.synchronize()
single = []
for _ in range(40):
    torch.cuda.synchronize()
    started = time.perf_counter_ns()
    graphs[0].replay()
    single.append((time.perf_counter_ns() - started) / 1000)
s0, s1 = torch.cuda.Stream(), torch.cuda.Stream()
gaps = []
for _ in range(20):
    torch.cuda.synchronize()
    with torch.cuda.stream(s0):
        started = time.perf_counter_ns()
        graphs[1].replay()
    with torch.cuda.stream(s1):
        graphs[1].replay()
        gaps.append((time.perf_counter_ns() - started) / 1000)
torch.cuda.synchronize()
ok = bool(outs[0].sum().item() == 1_000_000 * 94)
if os.environ.get("BENCH_PROFILE"):
    import cProfile
    import io
    import pstats

    with torch.cuda.stream(side):
        fresh = torch.cuda.CUDAGraph()
        fresh.capture_begin()
        b = func_with_temps(a.clone(), 1)
        fresh.capture_end()
    torch.cuda.synchronize()
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(16):
        fresh.replay()
    profile.disable()
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("cumulative").print_stats(30)
    with open(os.environ["BENCH_PROFILE"], "w") as out:
        out.write(text.getvalue())
emit({"host_us_per_step": sorted(single)[20], "gpu_us_per_step": 0.0, "steps": 40,
      "replay_host_us": [round(t, 1) for t in single], "gap_us": [round(t, 1) for t in gaps],
      "result_ok": ok})
