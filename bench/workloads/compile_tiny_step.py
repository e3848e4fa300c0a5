"""A tiny step under torch.compile(mode="reduce-overhead"): 8 Linear(256, 256) layers on a
batch of 8, so each call is a graph replay of a few microseconds of GPU work wrapped in
CUDAGraph Trees' Python: the loop where graphdoctor's per-call cost shows most.

Prints the median of 5 blocks of 1,000 calls, and, inside this one process:
``hook_us``, what graphdoctor's wrappers of a compiled call (``CUDAGraphTreeManager.run``)
and of a replay cost a call (blocks with them alternating with blocks without); and
``graphdoctor_calls``, every function of graphdoctor's a call runs, by cProfile.
``BENCH_PROFILE=FILE``: 2,000 more calls under cProfile, the costliest functions to FILE."""
import os

import torch
from _common import emit, graphdoctor_calls, hook_cost, median_of_blocks, profile_block
from torch._inductor.cudagraph_trees import CUDAGraphTreeManager

torch.manual_seed(0)
model = torch.nn.Sequential(*[torch.nn.Linear(256, 256) for _ in range(8)]).cuda().eval()
step_fn = torch.compile(model, mode="reduce-overhead")
x = torch.randn(8, 256, device="cuda")
replay_owner = next(k for k in torch.cuda.CUDAGraph.__mro__ if "replay" in k.__dict__)
expected = model(x)


def step():
    step_fn(x)


with torch.no_grad():
    for _ in range(20):
        out = step_fn(x)
    torch.cuda.synchronize()
    assert torch.allclose(out, model(x), atol=1e-3, rtol=1e-3), "compiled step differs"
    result = median_of_blocks(step, 1000, 5)
    result.update(hook_cost(step, 500, 7, [(CUDAGraphTreeManager, "run"),
                                           (replay_owner, "replay")]))
    result["graphdoctor_calls"] = graphdoctor_calls(step, 200)
    emit(result)
    if os.environ.get("BENCH_PROFILE"):
        profile_block(step, 2000, os.environ["BENCH_PROFILE"])
