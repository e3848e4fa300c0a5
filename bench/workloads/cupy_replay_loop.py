"""A replay loop of a CuPy graph (100 small elementwise kernels, 3000 launches), for the
cost of graphdoctor's CUPTI layer (--cupti) on graphs made outside PyTorch. Times itself
with CUDA events and the host clock, as _common.timed_loop does for torch."""
import json
import time

import cupy as cp

x = cp.ones(1 << 12, dtype=cp.float32)
stream = cp.cuda.Stream(non_blocking=True)


def step(y):
    for _ in range(100):
        y = y * 1.0001 + 1e-4
    return y


with stream:
    step(x)
    stream.synchronize()
    stream.begin_capture()
    step(x)
    graph = stream.end_capture()
    for _ in range(20):
        graph.launch(stream)
    steps = 3000
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
