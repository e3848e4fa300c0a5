"""The functions the GPU tests of graphdoctor.check and the pytest plugin record: one whose
capture fails, one torch.compile skips, and a healthy one. Imported only on a GPU."""

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
