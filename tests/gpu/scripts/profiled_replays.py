"""Ten replays of a captured graph under the script's own torch.profiler, as in issue 19:
prints how many events of each name the profile holds."""
import collections
import json

import torch
from torch.profiler import ProfilerActivity, profile

x = torch.randn(256, 256, device="cuda")
lin = torch.nn.Linear(256, 256).cuda()
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    for _ in range(3):
        lin(x).relu()
torch.cuda.current_stream().wait_stream(side)
torch.cuda.synchronize()
graph = torch.cuda.CUDAGraph()
with torch.cuda.graph(graph):
    y = lin(x).relu()
for _ in range(3):
    graph.replay()
torch.cuda.synchronize()
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
    for _ in range(10):
        graph.replay()
    torch.cuda.synchronize()
names = collections.Counter(event.name for event in prof.events())
seen = {"total": sum(names.values()), "by name": dict(sorted(names.items()))}
print("EVENTS " + json.dumps(seen), flush=True)
