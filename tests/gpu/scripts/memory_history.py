"""The script's own allocator history around a capture, read back with _snapshot(), as in
issue 19: prints the trace entries it saw (by action), the segments, and whether blocks carry
stacks; then the same after it turns its history off, and once more with none recorded."""
import collections
import json
import sys

import torch

WITH_HISTORY = sys.argv[1:] != ["never"]


def seen(when):
    snapshot = torch.cuda.memory._snapshot()
    actions = collections.Counter(e["action"] for trace in snapshot["device_traces"]
                                  for e in trace)
    framed = sum(bool(b.get("frames")) for s in snapshot["segments"] for b in s["blocks"])
    print(f"SNAPSHOT {when} " + json.dumps({"entries": dict(sorted(actions.items())),
                                            "segments": len(snapshot["segments"]),
                                            "blocks with stacks": framed}), flush=True)


x = torch.randn(256, 256, device="cuda")
lin = torch.nn.Linear(256, 256).cuda()
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    for _ in range(3):
        lin(x).relu()
torch.cuda.current_stream().wait_stream(side)
torch.cuda.synchronize()
if WITH_HISTORY:
    torch.cuda.memory._record_memory_history(max_entries=100000)
graph = torch.cuda.CUDAGraph()
with torch.cuda.graph(graph):
    y = lin(x).relu()
graph.replay()
torch.cuda.synchronize()
seen("while recording" if WITH_HISTORY else "never recorded")
if WITH_HISTORY:
    torch.cuda.memory._record_memory_history(enabled=None)
    seen("after turning it off")
