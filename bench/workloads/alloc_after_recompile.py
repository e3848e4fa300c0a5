"""Allocation churn after torch.compile recompiled for a re-allocated CUDA buffer: from then
on graphdoctor keeps allocation stacks (the allocator's "state" history), so each
allocation pays for its Python stack. The same churn as alloc_churn (500 steps, about 120
allocations each); compare the two workloads' ratios."""
import torch
from _common import emit, make_churn, timed_loop


class Cache(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("k", torch.zeros(8, 16, device="cuda"))

    def forward(self, x):
        return (self.k.sum() + x).sum()


cache = Cache()
compiled = torch.compile(cache, backend="eager")
compiled(torch.ones(1, device="cuda"))
cache.k = torch.zeros(8, 32, device="cuda")  # re-allocated at another size: a recompile
compiled(torch.ones(1, device="cuda"))

step = make_churn()
for _ in range(20):
    step()
emit(timed_loop(step, 500))
