"""GD309 shared-pool-concurrent-replay over small traces built inline: two graphs captured
into one pool, replayed on two streams as PyTorch's ``test_graph_concurrent_replay`` does
(the second stream made to wait for the first *before* the first replay, which orders
nothing); and the silences: a wait, an event or a sync after the first replay, one stream,
graphs in pools of their own, a graph replayed after itself."""

from __future__ import annotations

from graphdoctor.diagnose import diagnose
from graphdoctor.diagnose.findings import Finding
from graphdoctor.diagnose.rules.gd309_shared_pool_concurrent_replay import check
from graphdoctor.diagnose.view import TraceView
from graphdoctor.report.document import build, to_json
from graphdoctor.report.schema import check as check_schema
from graphdoctor.trace.event_kinds import NONE, ReplaySite, StreamOp, Sync
from graphdoctor.trace.model import Frame, Graph, Trace

TEST = "/u/test_graphs.py"
S0, S1 = 0x10, 0x20
FRAMES = [Frame(TEST, 10, "capture"), Frame(TEST, 20, "race"), Frame(TEST, 22, "race")]
CAPTURE, FIRST_REPLAY, SECOND_REPLAY = range(3)


def trace_of(pools: tuple[str, str], sites: list[ReplaySite], syncs: list[Sync] = (),
             ops: list[StreamOp] = ()) -> Trace:
    trace = Trace()
    trace.frames, trace.stacks = list(FRAMES), [(0,), (1,), (2,)]
    trace.graphs = [Graph(g, "CUDAGraph", "captured", 100 + g, 150 + g, pool=pool,
                          stack=CAPTURE) for g, pool in enumerate(pools)]
    trace.replay_counts = {0: 1, 1: 1}
    for table, rows in (("replay_sites", sites), ("syncs", syncs), ("stream_ops", ops)):
        for row in rows:
            trace.tables[table].append(row)
    return trace


def raced(*, second_stream: int = S1) -> list[ReplaySite]:
    return [ReplaySite(1_000, 0, S0, 0, FIRST_REPLAY),
            ReplaySite(1_050, 1, second_stream, 0, SECOND_REPLAY)]


def findings(trace: Trace) -> list[Finding]:
    return list(check(TraceView(trace)))


def test_two_graphs_of_one_pool_replayed_on_two_streams_race_at_the_second_replay() -> None:
    wait_before = StreamOp(900, "wait_stream", S1, S0, NONE, 0, FIRST_REPLAY)  # orders nothing
    [finding] = findings(trace_of(("(1, 7)", "(1, 7)"), raced(), ops=[wait_before]))
    assert (finding.id, finding.severity, finding.category, finding.graph) == (
        "GD309", "error", "unsafe", 1)
    assert finding.location is not None and finding.location.line == 22
    assert "test_graphs.py:20" in finding.explanation and "wait_stream" in finding.fix
    trace = trace_of(("(1, 7)", "(1, 7)"), raced())
    report = build(trace, diagnose(trace))
    check_schema(to_json(report))  # the replay sites travel in the report
    assert any(f.id == "GD309" for f in report.diagnosis.findings)


def test_a_wait_an_event_or_a_sync_after_the_first_replay_orders_them() -> None:
    pools = ("(1, 7)", "(1, 7)")
    waited = StreamOp(1_010, "wait_stream", S1, S0, NONE, 0, FIRST_REPLAY)
    recorded = StreamOp(1_010, "record", S0, 0xE, NONE, 0, FIRST_REPLAY)
    event_wait = StreamOp(1_020, "event_wait", S1, 0xE, NONE, 0, FIRST_REPLAY)
    synced = Sync(1_020, "device_synchronize", 0, NONE, 0, FIRST_REPLAY)
    stream_synced = Sync(1_020, "stream_synchronize", S0, NONE, 0, FIRST_REPLAY)
    assert findings(trace_of(pools, raced(), ops=[waited])) == []
    assert findings(trace_of(pools, raced(), ops=[recorded, event_wait])) == []
    assert findings(trace_of(pools, raced(), syncs=[synced])) == []
    assert findings(trace_of(pools, raced(), syncs=[stream_synced])) == []


def test_one_stream_own_pools_or_one_graph_is_no_race() -> None:
    assert findings(trace_of(("(1, 7)", "(1, 7)"), raced(second_stream=S0))) == []
    assert findings(trace_of(("(1, 7)", "(1, 8)"), raced())) == []
    alone = [ReplaySite(1_000, 0, S0, 0, FIRST_REPLAY), ReplaySite(1_050, 0, S1, 0, FIRST_REPLAY)]
    assert findings(trace_of(("(1, 7)", "(1, 7)"), alone)) == []
    unrelated = StreamOp(1_010, "record", S1, 0xE, NONE, 0, FIRST_REPLAY)  # wrong stream
    assert len(findings(trace_of(("(1, 7)", "(1, 7)"), raced(), ops=[unrelated]))) == 1
