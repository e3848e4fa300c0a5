"""GD101, written with float(): a norm read to the host to scale by it."""
import torch

x = torch.randn(1024, device="cuda")
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    y = x / x.norm()
torch.cuda.current_stream().wait_stream(s)

g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    norm = float(x.norm())
    y = x / norm
for _ in range(3):
    g.replay()
torch.cuda.synchronize()
print("unit norm:", round(float(y.norm()), 3))
