"""What the GPU tests of graphdoctor.check and the pytest plugin record: captures that fail
(one with random numbers), one torch.compile skips, a healthy one. Imported on a GPU only."""

import torch

torch.manual_seed(0)
counts = torch.zeros(16, device="cuda")
weights = [torch.randn(64, 64, device="cuda") / 8 for _ in range(200)]


def scaled(x):
    y = x * 2
    return y / y.abs().max().item()  # a host sync: illegal while capturing


@torch.compile(mode="reduce-overhead")
def counted(x):
    counts[0] += 1  # writes a tensor the graph does not own: CUDA graphs are skipped
    return torch.relu(x) * 2


def layers(x):
    """200 small matmuls: launch-bound in eager mode, one launch as a graph."""
    for w in weights:
        x = torch.tanh(x @ w)
    return x


def noisy(x):
    """Random numbers, then a host sync: a capture that fails once the device's generator is
    in it."""
    y = x + torch.rand_like(x)
    return y / y.max().item()
