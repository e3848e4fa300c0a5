"""A long life of CUDA graphs in one process: 1,000 graphs captured (at most 50 alive at a
time, the others deleted, their inputs and outputs freed), each replayed 1,000 times (a
million replays), then a compiled function with a graph break and a recompile per shape,
called between them. It checks its own results and reports its resident memory as it goes,
so the recorder's memory over the run can be set beside the plain run's.

Prints ``rss_mb`` (resident memory at each tenth of the replays), ``replays``, ``graphs``,
``seconds`` and ``ok``."""
import os
import time

import torch
from _common import emit

GRAPHS, REPLAYS_EACH, ALIVE = int(os.environ.get("SOAK_GRAPHS", 1000)), \
    int(os.environ.get("SOAK_REPLAYS", 1000)), 50


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def capture(i: int) -> tuple[torch.cuda.CUDAGraph, torch.Tensor, torch.Tensor]:
    x = torch.full((64 + i % 7,), float(i), device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        y = x * 2 + 1  # warm-up
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = x * 2 + 1
    return graph, x, y


@torch.compile(mode="reduce-overhead")
def compiled_step(x):
    y = torch.tanh(x) * 2
    print("step", end="")  # a graph break
    return y + 1


start, ok, alive, samples = time.perf_counter(), True, [], []
for i in range(GRAPHS):
    graph, x, y = capture(i)
    alive.append((graph, x, y))
    for _ in range(REPLAYS_EACH):
        graph.replay()
    ok &= bool(y[0].item() == 2 * i + 1)
    if len(alive) > ALIVE:
        del alive[0]  # the graph, its input and its output freed
    if i % 100 == 99:
        for shape in (8, 16, 32):  # a recompile per new shape
            out = compiled_step(torch.ones(shape, device="cuda"))
            ok &= bool(abs(out[0].item() - (2 * torch.tanh(torch.tensor(1.0)).item() + 1))
                       < 1e-3)
        samples.append(round(rss_mb(), 1))
torch.cuda.synchronize()
emit({"host_us_per_step": 0.0, "gpu_us_per_step": 0.0, "steps": GRAPHS * REPLAYS_EACH,
      "rss_mb": samples, "replays": GRAPHS * REPLAYS_EACH, "graphs": GRAPHS,
      "seconds": round(time.perf_counter() - start, 1), "ok": ok})
