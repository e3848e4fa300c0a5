"""A large, realistic-shaped report for load and redraw benchmarks (no GPU needed).

    python bench/synthetic.py --events 1000000 -o /tmp/big.json[.gz]

It repeats the pattern of a recorded run (a warmup, a capture, then many steps of replays
with allocations, syncs and stream operations) until it holds the requested number of
events. Timing figures in it are made up: it is for measuring graphdoctor, never a fixture.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from graphdoctor.diagnose import diagnose  # noqa: E402
from graphdoctor.report.document import Report, build  # noqa: E402
from graphdoctor.report.io import save  # noqa: E402
from graphdoctor.trace.model import (  # noqa: E402
    Alloc,
    Frame,
    GpuSample,
    Graph,
    MemorySample,
    Meta,
    Replay,
    RunStatus,
    StreamOp,
    Sync,
    Trace,
)

STEP_NS = 700_000


def synthetic_trace(events: int) -> Trace:
    trace = Trace(meta=Meta(tool_version="bench", argv=("run", "synthetic.py"),
                            target="synthetic.py", cuda_available=True),
                  status=RunStatus(complete=True, reason="exited", exit_code=0))
    trace.frames = [Frame("synthetic.py", 10 + i, f"layer_{i}", "user") for i in range(40)]
    trace.stacks = [tuple(range(i % 40, i % 40 + 1)) for i in range(40)]
    trace.graphs = [Graph(id=0, api="torch.cuda.graph", status="captured", capture_start=1_000,
                          capture_end=50_000, pool="(1, 0)", stream=7, stack=0)]
    step, count = 0, 0
    while count < events:
        count += _one_step(trace, step)
        step += 1
    trace.phases = []
    return trace


def _one_step(trace: Trace, step: int) -> int:
    t = 100_000 + step * STEP_NS
    tables = trace.tables
    tables["replays"].append(Replay(t, 5_000, 650_000, 0, 7, 0))
    for i in range(4):
        addr = 0x7F00_0000_0000 + (step % 64) * 4096 + i * 512
        tables["allocs"].append(Alloc(t + 10_000 + i * 1000, "alloc", addr, 512, 7, "default", -1,
                                      i % 40, 0, "replay"))
        tables["allocs"].append(Alloc(t + 400_000 + i * 1000, "free_completed", addr, 512, 7,
                                      "default", -1, i % 40, 0, "replay"))
    tables["syncs"].append(Sync(t + 650_000, "item", -1, -1, 0, step % 40, "replay"))
    tables["stream_ops"].append(StreamOp(t + 660_000, "wait_stream", 7, 9, -1, 0, 1, "replay"))
    if step % 16 == 0:
        tables["memory"].append(MemorySample(t, 2**30 + step * 512, 2**31, 0, "replay"))
        tables["gpu_samples"].append(GpuSample(t, 0, 97, 40, 2**34, 1980))
        return 13
    return 11


def synthetic_report(events: int) -> Report:
    from graphdoctor.trace.phases import Interval, derive

    trace = synthetic_trace(events)
    replays = trace.tables["replays"]
    trace.phases = derive([Interval(1_000, 50_000, "capture", 0),
                           Interval(replays.column("t")[0], replays.column("t")[-1], "replay", 0)],
                          replays.column("t")[-1] + STEP_NS)
    return build(trace, diagnose(trace))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("-o", "--output", type=Path, required=True)
    options = parser.parse_args()
    report = synthetic_report(options.events)
    save(report, options.output)
    print(f"{options.output}: {report.trace.event_count} events, "
          f"{options.output.stat().st_size / 2**20:.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
