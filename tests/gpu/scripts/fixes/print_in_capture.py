"""GD101, written with print: the captured step prints a CUDA tensor (a copy to the host)."""
import torch

x = torch.randn(1024, device="cuda")
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    y = x * 2
torch.cuda.current_stream().wait_stream(s)

g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    y = x * 2
    print("max", y.max())
    z = y + 1
for _ in range(3):
    g.replay()
torch.cuda.synchronize()
