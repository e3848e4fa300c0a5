"""A host-bound replay loop: a graph of one small kernel (64x64 tanh), 5000 replays, so the
host's time per replay is launch overhead and any hook on graph launches shows in it."""
import torch
from _common import emit, timed_loop, warm_and_capture

x = torch.randn(64, 64, device="cuda")
graph, _ = warm_and_capture(torch.tanh, x)
for _ in range(20):
    graph.replay()
emit(timed_loop(graph.replay, 5000))
