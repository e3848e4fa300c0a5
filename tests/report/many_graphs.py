"""A trace with a graph per sequence length, all captured at one line (decode.py:88), and
one more graph at another line: the verdicts the reports show as a group."""

from __future__ import annotations

from graphdoctor.diagnose import diagnose
from graphdoctor.report.document import Report, build
from graphdoctor.trace.model import Call, Frame, Graph, Replay, Trace
from graphdoctor.trace.phases import Interval, derive

MIB = 1024 * 1024
SAMPLES = 10


def many_graphs_trace(count: int = 32) -> Trace:
    """``count`` graphs at decode.py:88, each faster than eager by a little more than the
    last (2.00x up), and graph ``count`` at decode.py:120, slower than eager."""
    trace = Trace()
    trace.frames = [Frame("/u/decode.py", 5, "<module>", "user"),
                    Frame("/u/decode.py", 88, "capture", "user"),
                    Frame("/u/decode.py", 120, "capture_lm_head", "user")]
    trace.stacks = [(0, 1), (0, 2)]
    for g in range(count):
        _graph(trace, g, stack=0, eager_us=200 + g * 10, replay_us=100, pool_mib=12 + g)
    _graph(trace, count, stack=1, eager_us=80, replay_us=100, pool_mib=4)
    end = 10**9
    trace.phases = derive([Interval(0, end // 2, "capture", 0),
                           Interval(end // 2, end, "replay", 0)], end)
    return trace


def _graph(trace: Trace, g: int, stack: int, eager_us: int, replay_us: int,
           pool_mib: int) -> None:
    base = g * 1_000_000
    trace.graphs.append(Graph(g, "torch.cuda.graph", "captured", base, base + 100,
                              pool=f"(1, {g})", stream=7, stack=stack, callees=(g,),
                              pool_bytes=pool_mib * MIB))
    for i in range(SAMPLES + g % 3):
        trace.tables["calls"].append(Call(base + 1000 + i * 10, 20_000, eager_us * 1000, g,
                                          "eager", -1))
        trace.tables["replays"].append(Replay(500_000_000 + base + i * 10, 3000,
                                              replay_us * 1000, g, 7, 0))


def many_graphs_report(count: int = 32) -> Report:
    trace = many_graphs_trace(count)
    return build(trace, diagnose(trace), read_line=lambda file, line: "")
