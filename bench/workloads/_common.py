"""Shared by the benchmark workloads: the step under test and an honest in-script timer."""

import json
import sys
import time

import torch


def make_step(layers: int, width: int):
    torch.manual_seed(0)
    weights = [torch.randn(width, width, device="cuda") / width**0.5 for _ in range(layers)]

    def step(x):
        for w in weights:
            x = torch.tanh(x @ w)
        return x

    return step


def make_churn():
    """A step that makes and drops many tensors of varied sizes (about 120 allocations)."""
    sizes = [(64 * (1 + i % 7), 32 * (1 + i % 5)) for i in range(40)]
    x = torch.randn(64, 64, device="cuda")

    def step():
        total = x.sum()
        for rows, cols in sizes:
            a = torch.empty(rows, cols, device="cuda").fill_(1.0)
            b = a * 2 + 1
            total = total + b.mean()
        return total

    return step


def warm_and_capture(step, static_x):
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step(static_x)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_y = step(static_x)
    torch.cuda.synchronize()
    return graph, static_y


def timed_loop(body, steps: int) -> dict:
    """Per-step time of `steps` calls of body, by CUDA events and by the host clock."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    host = time.perf_counter()
    start.record()
    for _ in range(steps):
        body()
    end.record()
    torch.cuda.synchronize()
    host = time.perf_counter() - host
    return {"gpu_us_per_step": start.elapsed_time(end) * 1000 / steps,
            "host_us_per_step": host * 1e6 / steps, "steps": steps}


def median_of_blocks(body, steps: int, blocks: int) -> dict:
    """``timed_loop`` over ``blocks`` blocks: the median block's figures, and each block's."""
    runs = [timed_loop(body, steps) for _ in range(blocks)]
    middle = sorted(runs, key=lambda run: run["host_us_per_step"])[blocks // 2]
    return {**middle, "blocks_host_us": [round(run["host_us_per_step"], 3) for run in runs]}


def profile_block(body, steps: int, out: str) -> None:
    """One block of ``body`` under cProfile; the costliest functions written to ``out``."""
    import cProfile
    import io
    import pstats

    profile = cProfile.Profile()
    profile.enable()
    timed_loop(body, steps)
    profile.disable()
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(25)
    with open(out, "w") as file:
        file.write(text.getvalue())


def emit(result: dict) -> None:
    print("BENCH " + json.dumps(result), flush=True)
    sys.stdout.flush()
