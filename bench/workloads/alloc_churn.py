"""Heavy allocation churn: every step makes and drops many tensors of varied sizes
(500 steps, about 120 allocations each)."""
import torch
from _common import emit, timed_loop

sizes = [(64 * (1 + i % 7), 32 * (1 + i % 5)) for i in range(40)]
x = torch.randn(64, 64, device="cuda")


def step():
    total = x.sum()
    for rows, cols in sizes:
        a = torch.empty(rows, cols, device="cuda").fill_(1.0)
        b = a * 2 + 1
        total = total + b.mean()
    return total


for _ in range(20):
    step()
emit(timed_loop(step, 500))
