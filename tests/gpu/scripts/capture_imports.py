"""Prints the modules imported during one capture: raw, make_graphed_callables, or the
recording call of a reduce-overhead function. Used plain and under graphdoctor."""
import json
import sys

import torch

MODE = sys.argv[1]
x = torch.randn(64, 64, device="cuda")
lin = torch.nn.Linear(64, 64).cuda()


def step(inp):
    return torch.tanh(lin(inp))


side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    for _ in range(3):
        step(x).sum().backward()
torch.cuda.current_stream().wait_stream(side)
torch.cuda.synchronize()

if MODE == "compile":
    compiled = torch.compile(step, mode="reduce-overhead")
    compiled(x)  # compiles and warms up; the next call records the graph
    torch.cuda.synchronize()

before = set(sys.modules)
if MODE == "raw":
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = step(x)
elif MODE == "graphed":
    torch.cuda.make_graphed_callables(lin, (torch.randn(8, 64, device="cuda",
                                                        requires_grad=True),))
else:
    compiled(x)
torch.cuda.synchronize()
print("IMPORTS " + json.dumps(sorted(set(sys.modules) - before)), flush=True)
