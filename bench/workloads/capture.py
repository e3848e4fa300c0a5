"""Capture cost: the first capture of a process, later captures, and a capture of a deep step.

A one-matmul step is warmed up on a side stream (the documented pattern), then captured once
(the first capture of the process, where one-time costs would show) and 20 more times; a
100-layer Linear+tanh step (about 300 ops) is then captured 30 times, where a per-op cost
would show. Each capture is timed on the host, synchronized before and after, as a user
timing ``with torch.cuda.graph(g): ...`` would.
"""
import statistics
import time

import torch
from _common import emit

torch.manual_seed(0)
x = torch.randn(64, 64, device="cuda")
w = torch.randn(64, 64, device="cuda")
deep = torch.nn.Sequential(*[m for _ in range(100)
                             for m in (torch.nn.Linear(64, 64), torch.nn.Tanh())]).cuda()


def tiny(inp):
    return torch.tanh(inp @ w)


def warm(step):
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), torch.no_grad():
        for _ in range(3):
            step(x)
    torch.cuda.current_stream().wait_stream(side)


def capture_ms(step) -> float:
    graph = torch.cuda.CUDAGraph()
    torch.cuda.synchronize()
    started = time.perf_counter()
    with torch.cuda.graph(graph), torch.no_grad():
        step(x)
    torch.cuda.synchronize()
    took = (time.perf_counter() - started) * 1000
    graph.replay()
    return took


warm(tiny)
warm(deep)
first = capture_ms(tiny)
later = [capture_ms(tiny) for _ in range(20)]
deep_ms = [capture_ms(deep) for _ in range(30)]
emit({"first_capture_ms": first, "later_capture_ms": statistics.median(later),
      "deep_capture_ms": statistics.median(deep_ms)})
