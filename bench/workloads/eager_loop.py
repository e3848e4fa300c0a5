"""An eager loop of many small kernels (100 layers of 64x64 matmul + tanh, 1500 steps).

The step is also captured once, so graphdoctor times every eager call of it: the worst
case for graphdoctor's eager overhead."""
import torch
from _common import emit, make_step, timed_loop, warm_and_capture

step = make_step(100, 64)
x = torch.randn(64, 64, device="cuda")
warm_and_capture(step, x)
for _ in range(20):
    step(x)
emit(timed_loop(lambda: step(x), 1500))
