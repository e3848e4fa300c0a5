"""GD109 empty-graph is waste, never harm: PyTorch's own tests capture empty graphs on
purpose and never replay them. Never replayed, a note; replayed, a warning; either way the
graph's verdict is what its timings say, never unsafe, with the emptiness said first."""

from __future__ import annotations

from graphdoctor.diagnose import diagnose
from graphdoctor.diagnose.findings import INFO, UNSAFE, WARNING, WASTEFUL
from graphdoctor.trace.event_kinds import Replay, WarningRecord
from graphdoctor.trace.model import Frame, Graph, Trace

EMPTY = "UserWarning: The CUDA Graph is empty. This usually means that the graph was..."


def empty_graph(replays: int) -> Trace:
    trace = Trace()
    trace.frames, trace.stacks = [Frame("/u/test_graphs.py", 12, "test_empty")], [(0,)]
    trace.graphs = [Graph(0, "torch.cuda.graph", "captured", 100, 200, stack=0)]
    trace.warnings = [WarningRecord(150, "UserWarning", EMPTY, 0, 0)]
    for i in range(replays):
        trace.tables["replays"].append(Replay(1_000 + i * 100, 5, 4, 0, 7, 0))
    trace.replay_counts = {0: replays}
    return trace


def test_an_empty_graph_never_replayed_is_a_note() -> None:
    diagnosis = diagnose(empty_graph(0))
    [finding] = [f for f in diagnosis.findings if f.id == "GD109"]
    assert (finding.severity, finding.category) == (INFO, WASTEFUL)
    assert all(v.kind != UNSAFE for v in diagnosis.verdicts)


def test_an_empty_graph_replayed_is_a_warning_of_waste_said_in_its_verdict() -> None:
    diagnosis = diagnose(empty_graph(3))
    [finding] = [f for f in diagnosis.findings if f.id == "GD109"]
    assert (finding.severity, finding.category) == (WARNING, WASTEFUL)
    [verdict] = diagnosis.verdicts
    assert verdict.kind != UNSAFE and verdict.summary.startswith("graph 0 captured nothing")
