"""The trace format: spool reading, assembly, phases, the JSON codec, log parsing."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from graphdoctor.facts import queries
from graphdoctor.trace import codec
from graphdoctor.trace.assemble import assemble
from graphdoctor.trace.frames import classify_path, frames_in_text, trim_runner_frames
from graphdoctor.trace.model import CAPTURE, EAGER, REPLAY, WARMUP, Graph, Replay, Table, Trace
from graphdoctor.trace.phases import Interval, PhaseIndex, derive
from graphdoctor.trace.spool.file import SpoolWriter, append_record, read_records
from graphdoctor.trace.spool.records import Hello, RunEnd
from graphdoctor.trace.torch_logs import compile_logs
from tests.reports import scenario_names, trace_for


def test_spool_skips_a_torn_last_line(tmp_path: Path) -> None:
    path = tmp_path / "s.spool"
    writer = SpoolWriter(path)
    writer.write(Hello({"version": 1}))
    writer.write(Replay(1, 2, 3, 0, 7, 0))
    writer.close()
    with open(path, "a") as handle:
        handle.write('["replay", 5, 6')  # the child died mid-line
    append_record(path, RunEnd({"exit_code": 139}))
    assert [r[0] for r in read_records(path)] == ["hello", "replay", "run_end"]


def test_spool_reads_gzip(tmp_path: Path) -> None:
    path = tmp_path / "s.spool.gz"
    path.write_bytes(gzip.compress(b'["hello", {}]\n["end", {}]\n'))
    assert [r[0] for r in read_records(path)] == ["hello", "end"]


def test_assembly_builds_graphs_replays_and_status() -> None:
    trace = assemble([
        ["hello", {"version": 1, "target": "t.py", "mode": "default"}],
        ["frame", 0, "/home/u/t.py", 9, "<module>", "user"], ["stack", 0, [0]],
        ["graph", {"id": 0, "t": 100, "api": "torch.cuda.graph", "stream": 7, "stack": 0}],
        ["graph_end", {"id": 0, "t": 200, "status": "captured", "pool": "(1, 0)",
                       "pool_bytes": 2048, "error": -1, "callees": []}],
        ["replay", 300, 10, 5, 0, 7, 0], ["replay", 400, 10, 5, 0, 7, 0],
        ["end", {"exit_code": 0}],
        ["run_end", {"exit_code": 0, "reason": "exited", "signal": None, "wall_ns": 1000}],
    ])
    assert [g.status for g in trace.graphs] == ["captured"]
    assert trace.graphs[0].pool_bytes == 2048 and len(trace.tables["replays"]) == 2
    assert [p.phase for p in trace.phases] == [EAGER, CAPTURE, EAGER, REPLAY]
    assert trace.status.complete and trace.status.last_phase == REPLAY


def test_a_capture_that_never_ended_is_the_last_phase() -> None:
    trace = assemble([
        ["graph", {"id": 0, "t": 100, "api": "CUDAGraph", "stream": 7}],
        ["sync", 150, "item", -1, 0, 0, -1],
        ["run_end", {"exit_code": 139, "reason": "signal", "signal": 11}],
    ])
    assert trace.graphs[0].status == "capturing"
    assert trace.status.last_phase == CAPTURE and not trace.status.complete
    assert trace.status.message == "the script was killed by SIGSEGV"


def test_assembly_survives_malformed_records() -> None:
    trace = assemble([["replay", "not", "numbers"], ["graph", {}], ["unknown-tag", 1]])
    assert any("could not be read" in n.why for n in trace.meta.not_recorded)


def test_phases_take_the_highest_priority_and_fill_gaps() -> None:
    # consecutive replays with nothing else between them are one replay phase
    spans = derive([Interval(10, 100, WARMUP), Interval(50, 60, CAPTURE, 3),
                    Interval(200, 210, REPLAY, 3), Interval(215, 230, REPLAY, 3)], 300)
    assert [(s.phase, s.start, s.end, s.graph) for s in spans] == [
        (EAGER, 0, 10, -1), (WARMUP, 10, 50, -1), (CAPTURE, 50, 60, 3), (WARMUP, 60, 100, -1),
        (EAGER, 100, 200, -1), (REPLAY, 200, 230, 3), (EAGER, 230, 300, -1)]
    index = PhaseIndex(spans)
    assert index.phase_at(55) == CAPTURE and index.phase_at(205) == REPLAY


def test_empty_phases() -> None:
    assert [(s.phase, s.start, s.end) for s in derive([], 50)] == [(EAGER, 0, 50)]


@pytest.mark.parametrize("name", scenario_names())
def test_codec_round_trip_of_every_recording(name: str) -> None:
    trace = trace_for(name)
    data = json.loads(json.dumps(codec.encode(trace)))
    again = codec.decode(data)
    assert again == trace


def test_codec_fills_in_missing_fields_and_refuses_newer_versions() -> None:
    data = codec.encode(trace_for("launch_bound"))
    del data["tables"]["replays"]["stream"]
    data["graphs"][0]["a_field_from_the_future"] = 1
    trace = codec.decode(data)
    assert set(trace.tables["replays"].column("stream")) == {-1}
    data["version"] = codec.TRACE_VERSION + 1
    with pytest.raises(codec.TraceFormatError, match="newer"):
        codec.decode(data)


def test_table_rows_and_columns() -> None:
    table = Table(Replay)
    table.append(Replay(1, 2, 3, 0, 7, 0))
    assert list(table) == [Replay(1, 2, 3, 0, 7, 0)] and table[0].gpu == 3
    assert table.column("stream") == [7]


@pytest.mark.parametrize(("path", "kind"), [
    ("/home/u/train.py", "user"),
    ("/usr/lib/python3.12/site-packages/torch/nn/modules/module.py", "torch"),
    ("/venv/lib/python3.11/site-packages/transformers/models/llama.py", "lib"),
    ("/usr/lib/python3.12/threading.py", "python"),
    ("/tmp/torchinductor_root/ab/cabc.py", "torch"),
    ("<frozen runpy>", "python"),
])
def test_classify_path(path: str, kind: str) -> None:
    assert classify_path(path) == kind


@pytest.mark.parametrize("runner", ["/x/graphdoctor/record/child.py",
                                    "/x/graphdoctor/launch/runner.py"])
def test_frames_in_text_and_runner_trimming(runner: str) -> None:
    text = ('  File "<frozen runpy>", line 88, in _run_code\n'
            '  File "/x/graphdoctor/launch/launcher.py", line 20, in main\n'
            f'  File "{runner}", line 38, in run_target\n'
            '  File "<frozen runpy>", line 98, in _run_module_code\n'
            '  File "/home/u/t.py", line 10, in <module>\n'
            '  File "/home/u/t.py", line 7, in f\n')
    frames = frames_in_text(text)
    assert len(frames) == 6
    assert trim_runner_frames(frames) == [("/home/u/t.py", 10, "<module>"),
                                          ("/home/u/t.py", 7, "f")]


def _logs(name: str) -> list[tuple[str, str]]:
    path = Path(__file__).parents[2] / "fixtures" / "recordings" / f"{name}.spool.jsonl.gz"
    return [(r[2], r[4]) for r in read_records(path) if r[0] == "log"]


def test_parse_recorded_skip_message() -> None:
    parsed = [compile_logs.parse(logger, text) for logger, text in _logs("compile_mutated_input")]
    skips = [p for p in parsed if p and p["kind"] == "cudagraph_skip"]
    assert skips[0]["reason"] == "mutated inputs (1 instances)"
    assert skips[0]["frames"][-1][1:] == (10, "step")


def test_parse_recorded_graph_break_and_symint_keys() -> None:
    breaks = [compile_logs.parse(lg, t) for lg, t in _logs("compile_graph_break")]
    assert any(p and p["kind"] == "graph_break" and "item()" in p["reason"] for p in breaks)
    parsed = [compile_logs.parse(lg, t) for lg, t in _logs("compile_dynamic_shapes")]
    keys = {p["key"] for p in parsed if p and p["kind"] == "cudagraph_record"}
    assert {"(32, 32)", "(96, 96)"} <= keys


@pytest.mark.parametrize(("logger", "message", "kind", "reason"), [
    ("torch._inductor.cudagraph_utils.__perf_hints",  # the 2.10 wording and logger
     "skipping cudagraphs due to skipping cudagraphs due to cpu device (arg1_1)", "cudagraph_skip",
     "cpu device (arg1_1)"),
    ("torch._dynamo.guards.__recompiles",
     "Recompiling function f in /u/t.py:12\n    triggered by the following guard failure(s):\n"
     "    - 0/0: tensor 'x' size mismatch at index 0. expected 16, actual 32", "recompile",
     "tensor 'x' size mismatch at index 0. expected 16, actual 32"),
    ("torch._inductor.cudagraph_trees.__cudagraphs",
     "[0/0] Re-recording function=partition_0, mode=FORWARD, reason=static input data pointer "
     "changed.", "rerecord", "static input data pointer changed."),
    ("torch._inductor.scheduler.__cudagraphs",
     "Created 2 graph partitions: 1 cudagraphable, 1 non-cudagraphable\n  op0: reason=cpu ops, "
     "ir=ComputedBuffer", "partition", "1 of 2 partitions not cudagraphable (cpu ops)"),
])
def test_parse_other_wordings(logger: str, message: str, kind: str, reason: str) -> None:
    parsed = compile_logs.parse(logger, message)
    assert parsed is not None and parsed["kind"] == kind and parsed["reason"] == reason


def test_uninteresting_records_are_ignored() -> None:
    assert compile_logs.parse("torch._inductor.compile_fx.__perf_hints",
                              "Skip comprehensive padding on CPU") is None


def test_a_hung_gpu_run_is_not_said_to_have_no_cuda_device() -> None:
    """The hang ended the child before it could write its CUDA state; the sync it hung in
    shows CUDA ran (the report used to say "no CUDA device was found")."""
    from graphdoctor.report.render.summary import outcome_lines
    from tests.reports import report_for

    report = report_for("hang_in_gpu_sync")
    assert report.trace.meta.cuda_available
    assert not any("no CUDA device" in line for line in outcome_lines(report))


def test_graphdoctors_own_time_in_a_capture_is_a_phase_apart() -> None:
    from graphdoctor.facts.tallies import phase_totals
    from graphdoctor.trace.model import OWN

    trace = assemble([
        ["hello", {"version": 1, "target": "t.py", "mode": "default"}],
        ["graph", {"id": 0, "t": 100, "api": "torch.cuda.graph", "stream": 7}],
        ["graph_end", {"id": 0, "t": 1000, "status": "captured", "pool": "(1, 0)",
                       "own": [[100, 130], [900, 1000]]}],
        ["end", {"exit_code": 0}],
    ])
    graph = trace.graphs[0]
    assert graph.own_ns == 130 and graph.capture_ns == 900 - 130
    totals = {p.phase: p.total_ns for p in phase_totals(trace)}
    assert totals[OWN] == 130 and totals[CAPTURE] == 770


def test_pools_are_named_by_who_shares_them() -> None:
    """torch's id pairs mean nothing to a reader: a pool a graph keeps to itself is "own",
    pools graphs share (or the script handed over) are numbered in the order first used."""
    def graph(gid: int, pool: str, shared: bool = False) -> Graph:
        return Graph(gid, "torch.cuda.graph", "captured", 0, pool=pool, shared_pool=shared)

    trace = Trace(graphs=[graph(0, "(1, 0)"), graph(1, "(2, 0)"), graph(2, "(1, 0)"),
                          graph(3, "(0, 1)", shared=True), graph(4, "")])
    assert queries.pool_names(trace) == {"(1, 0)": "shared 1", "(2, 0)": "own",
                                         "(0, 1)": "shared 2"}
    assert [queries.pool_name(trace, g) for g in trace.graphs] == [
        "shared 1", "own", "shared 1", "shared 2", ""]


@pytest.mark.parametrize(("name", "names"), [
    ("many_private_pools", {"own"}), ("compile_healthy", {"shared 1"}),
    ("healthy_make_graphed_callables", {"shared 1"})])
def test_recorded_pools_are_named(name: str, names: set[str]) -> None:
    trace = trace_for(name)
    assert {queries.pool_name(trace, g) for g in trace.graphs if g.pool} == names
