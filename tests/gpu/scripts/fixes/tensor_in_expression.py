"""GD102, written inside an expression: host values made a GPU tensor inside the capture."""
import torch

x = torch.randn(256, device="cuda")
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    y = x * torch.tensor([0.5, 0.25, 0.25], device="cuda").sum()
for _ in range(3):
    g.replay()
torch.cuda.synchronize()
