"""A Quadrants kernel with CUDA graphs on (``@qd.kernel(graph=True)``), called in a loop: its
two top-level loops are one graph, replayed at each call. No PyTorch; graphdoctor sees it
through CUPTI (run it with ``--cupti``; the bench's ``cupti`` variants). The step time is
wall time per call over blocks of 500 calls ended by ``qd.sync()`` (median of 7 blocks),
reported under both keys the bench reads: the loop waits on the host here.

``BENCH_PROFILE=FILE``: one more block under cProfile, its 25 costliest functions written to
FILE (which CUPTI callbacks run per call, and what they cost)."""
import cProfile
import io
import json
import os
import pstats
import statistics
import time

import quadrants as qd

qd.init(arch=qd.cuda)
N = 1 << 14


@qd.kernel(graph=True)
def step(a: qd.types.ndarray(), b: qd.types.ndarray()):
    for i in a:
        a[i] = a[i] * 1.0001 + 1.0
    for i in b:
        b[i] = b[i] + a[i]


a, b = qd.ndarray(qd.f32, shape=N), qd.ndarray(qd.f32, shape=N)


def block(calls: int) -> float:
    qd.sync()
    started = time.perf_counter()
    for _ in range(calls):
        step(a, b)
    qd.sync()
    return (time.perf_counter() - started) * 1e6 / calls


for _ in range(50):
    step(a, b)
blocks = [block(500) for _ in range(7)]
us = statistics.median(blocks)
print("BENCH " + json.dumps({"gpu_us_per_step": us, "host_us_per_step": us, "steps": 500,
                             "blocks_host_us": [round(x, 2) for x in blocks]}), flush=True)
if os.environ.get("BENCH_PROFILE"):
    profile = cProfile.Profile()
    profile.enable()
    block(500)
    profile.disable()
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(25)
    with open(os.environ["BENCH_PROFILE"], "w") as file:
        file.write(text.getvalue())
