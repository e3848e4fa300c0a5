"""A replay loop of a captured step (100 layers of 64x64 matmul + tanh, 3000 replays)."""
import torch
from _common import emit, make_step, timed_loop, warm_and_capture

step = make_step(100, 64)
x = torch.randn(64, 64, device="cuda")
graph, _ = warm_and_capture(step, x)
for _ in range(20):
    graph.replay()
emit(timed_loop(graph.replay, 3000))
