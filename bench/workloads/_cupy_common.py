"""Shared by the CuPy workloads: capture a step on a stream, and time a launch loop with
CUDA events and the host clock, as _common.timed_loop does for torch."""
import json
import time
from contextlib import contextmanager

import cupy as cp


def capture(step, x, stream):
    """The graph of ``step(x)`` on ``stream``, after one eager call compiles its kernels."""
    with stream:
        step(x)
        stream.synchronize()
        stream.begin_capture()
        step(x)
        return stream.end_capture()


@contextmanager
def emit_timed(stream, steps: int):
    """Time the block's ``steps`` steps on ``stream`` with CUDA events and the host clock,
    and print the per-step times as a BENCH line."""
    start, end = cp.cuda.Event(), cp.cuda.Event()
    stream.synchronize()
    host = time.perf_counter()
    start.record(stream)
    yield
    end.record(stream)
    end.synchronize()
    host = time.perf_counter() - host
    print("BENCH " + json.dumps({"gpu_us_per_step": cp.cuda.get_elapsed_time(start, end) * 1000
                                                   / steps,
                                 "host_us_per_step": host * 1e6 / steps, "steps": steps}),
          flush=True)


def emit_launch_loop(graph, stream, steps: int) -> None:
    """Per-launch time of ``steps`` launches (after 20 to warm up), printed as a BENCH line."""
    for _ in range(20):
        graph.launch(stream)
    with emit_timed(stream, steps):
        for _ in range(steps):
            graph.launch(stream)


def emit_eager_loop(step, x, stream, steps: int) -> None:
    """Per-call time of ``steps`` eager calls of ``step`` on ``stream`` (after 20 to warm
    up), printed as a BENCH line: under --cupti, each is a call graphdoctor times."""
    with stream:
        for _ in range(20):
            step(x)
        with emit_timed(stream, steps):
            for _ in range(steps):
                step(x)
