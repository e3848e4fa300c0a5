"""PyTorch's training loop written at a script's top level, eager only: 16 small blocks
(Linear 256, LayerNorm, ReLU) in an nn.Sequential, MSELoss, backward and SGD's step, 200
steps after 20 of warmup. The script's own code calls torch's modules, backward and step
directly: each of those is a step part the eager history times for its first 256 calls (what
PyTorch's recipe needs to be measured from its warmup), so this is their worst case.

``BENCH_WARMUP=N``: N warmup steps (300: the timed steps come after those first calls, where
a long training run spends nearly all of its). ``graphdoctor_calls``: graphdoctor's functions
a step calls (by cProfile, over 20 more steps; ``sys.monitoring`` callbacks do not show).
``monitoring_us``: what those callbacks cost a step inside the window, by one-step blocks
with graphdoctor's callbacks present and taken away in one process, 100 pairs, with the 95%
interval of the median (:func:`_common.monitoring_cost`)."""
import os

import torch
from _common import eager_window, emit

torch.manual_seed(0)
model = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(256, 256),
                                                  torch.nn.LayerNorm(256), torch.nn.ReLU())
                              for _ in range(16)]).cuda()
loss_fn = torch.nn.MSELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(64, 256, device="cuda")
target = torch.randn(64, 256, device="cuda")


def body():
    optimizer.zero_grad(set_to_none=True)
    loss = loss_fn(model(x), target)
    loss.backward()
    optimizer.step()


for _ in range(int(os.environ.get("BENCH_WARMUP", "20"))):
    optimizer.zero_grad(set_to_none=True)
    loss = loss_fn(model(x), target)
    loss.backward()
    optimizer.step()
emit(eager_window(body, inside=not os.environ.get("BENCH_WARMUP")))
