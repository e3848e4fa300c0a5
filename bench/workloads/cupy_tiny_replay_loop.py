"""A host-bound CuPy replay loop: a graph of one small kernel, 5000 launches, so the host's
time per launch is launch overhead (see cupy_replay_loop.py for the GPU-bound one)."""
import json
import time

import cupy as cp

x = cp.ones(1 << 12, dtype=cp.float32)
stream = cp.cuda.Stream(non_blocking=True)
with stream:
    x * 2  # compile the kernel before the capture
    stream.synchronize()
    stream.begin_capture()
    x * 2
    graph = stream.end_capture()
    for _ in range(20):
        graph.launch(stream)
    steps = 5000
    start, end = cp.cuda.Event(), cp.cuda.Event()
    stream.synchronize()
    host = time.perf_counter()
    start.record(stream)
    for _ in range(steps):
        graph.launch(stream)
    end.record(stream)
    end.synchronize()
    host = time.perf_counter() - host
print("BENCH " + json.dumps({"gpu_us_per_step": cp.cuda.get_elapsed_time(start, end) * 1000
                                               / steps,
                             "host_us_per_step": host * 1e6 / steps, "steps": steps}),
      flush=True)
