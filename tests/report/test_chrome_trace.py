"""The Chrome trace export follows the Trace Event Format's rules that Perfetto enforces."""

from __future__ import annotations

import bisect
import dataclasses
import json
from collections import defaultdict
from typing import Any

import pytest

from graphdoctor.facts.job_clock import job_clock
from graphdoctor.facts.node_schedule import schedule
from graphdoctor.report.document import Report
from graphdoctor.report.render.chrome_gpu import MOST_NODE_SLICES
from graphdoctor.report.render.chrome_trace import to_chrome_trace
from graphdoctor.trace.model import Graph, Replay, Trace
from tests.report.helpers import NAMES, real

PHASE_TYPES = {"X", "i", "C", "M", "s", "t", "f", "b", "n", "e"}
Exported = tuple[str, dict[str, Any]]


def structure_problems(trace: dict[str, Any]) -> list[str]:
    """What breaks the format's rules; empty when the trace is well formed."""
    problems = []
    events = trace["traceEvents"]
    named_lanes = {(e["pid"], e["tid"]) for e in events if e["name"] == "thread_name"}
    named_processes = {e["pid"] for e in events if e["name"] == "process_name"}
    for e in events:
        if e["ph"] not in PHASE_TYPES or not isinstance(e["pid"], int):
            problems.append(f"bad event {e}")
        if e["ph"] == "M":
            continue
        if not isinstance(e["ts"], (int, float)) or e["ts"] < 0:
            problems.append(f"bad ts {e}")
        if e["pid"] not in named_processes:
            problems.append(f"process {e['pid']} has no name")
        if e["ph"] in ("X", "i", "s", "f") and (e["pid"], e["tid"]) not in named_lanes:
            problems.append(f"lane {e['pid']}/{e['tid']} has no name")
        if e["ph"] == "X" and (not isinstance(e["dur"], (int, float)) or e["dur"] < 0):
            problems.append(f"bad dur {e}")
        if e["ph"] == "i" and e.get("s") not in ("g", "p", "t"):
            problems.append(f"bad instant scope {e}")
        if e["ph"] == "C" and not all(isinstance(v, (int, float)) for v in e["args"].values()):
            problems.append(f"counter with a non-number {e}")
    return (problems + nesting_problems(events) + lane_name_problems(events)
            + flow_problems(events) + async_problems(events) + bound_flow_problems(events))


def nesting_problems(events: list[dict[str, Any]]) -> list[str]:
    """Slices on one lane nest: each starts after its parent and ends before the parent ends."""
    lanes: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    for e in events:
        if e["ph"] == "X":  # compare in integer nanoseconds, as Perfetto does
            start = round(e["ts"] * 1000)
            lanes[(e["pid"], e["tid"])].append((start, start + round(e["dur"] * 1000)))
    problems = []
    for lane, slices in lanes.items():
        open_ends: list[int] = []
        for start, end in sorted(slices, key=lambda s: (s[0], -s[1])):
            while open_ends and open_ends[-1] <= start:
                open_ends.pop()
            if open_ends and end > open_ends[-1]:
                problems.append(f"lane {lane}: slice {start}-{end} overlaps its parent")
            open_ends.append(end)
    return problems


def lane_name_problems(events: list[dict[str, Any]]) -> list[str]:
    """One tid per lane: no two lanes of a process share a name, no tid has two names."""
    names: dict[tuple[int, int], list[str]] = defaultdict(list)
    for e in events:
        if e["name"] == "thread_name":
            names[(e["pid"], e["tid"])].append(e["args"]["name"])
    problems = [f"lane {k} named {v}" for k, v in names.items() if len(v) != 1]
    per_process: dict[int, list[str]] = defaultdict(list)
    for (pid, _), lane_names in names.items():
        per_process[pid] += lane_names
    problems += [f"process {pid} repeats lane names" for pid, n in per_process.items()
                 if len(n) != len(set(n))]
    return problems


def flow_problems(events: list[dict[str, Any]]) -> list[str]:
    """Flow events (v1: s, t, f): each id (with its category) one start and one end, not
    before it; each end binds to the slice around it (bp=e), and both ends lie inside a
    slice of their lane, which Perfetto draws the arrow between."""
    problems: list[str] = []
    by_id: dict[tuple[str, Any], dict[str, list[dict[str, Any]]]] = defaultdict(
        lambda: defaultdict(list))
    for e in events:
        if e["ph"] in ("s", "t", "f"):
            if "id" not in e:
                problems.append(f"flow event without an id {e}")
                continue
            by_id[(e.get("cat", ""), e["id"])][e["ph"]].append(e)
    for key, phases in by_id.items():
        if len(phases["s"]) != 1 or len(phases["f"]) != 1:
            problems.append(f"flow {key}: {len(phases['s'])} starts, {len(phases['f'])} ends")
            continue
        start, end = phases["s"][0], phases["f"][0]
        if end["ts"] < start["ts"]:
            problems.append(f"flow {key} runs backwards")
        if end.get("bp") != "e":
            problems.append(f"flow end {end} without bp=e")
        problems += [f"flow {key} binds to no slice at {e}" for e in (start, end)
                     if not inside_a_slice(events, e)]
    return problems


def inside_a_slice(events: list[dict[str, Any]], point: dict[str, Any]) -> bool:
    """Whether a slice of ``point``'s lane holds its moment (in integer nanoseconds)."""
    starts, ends = lane_slices(events)[1].get((point["pid"], point["tid"]), ([], []))
    at = round(point["ts"] * 1000)
    last = bisect.bisect_right(starts, at)
    return any(ends[i] >= at for i in range(max(last - 64, 0), last))  # nesting: a few deep


def lane_slices(events: list[dict[str, Any]]) -> tuple[Any, dict[tuple[int, int], Any]]:
    """Each lane's slices as sorted starts and their ends (ns), for one events list."""
    cached = getattr(lane_slices, "cached", None)
    if cached is not None and cached[0] is events:
        return cached  # type: ignore[no-any-return]
    grouped: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    for e in events:
        if e["ph"] == "X":
            start = round(e["ts"] * 1000)
            grouped[(e["pid"], e["tid"])].append((start, start + round(e["dur"] * 1000)))
    lanes = {lane: ([a for a, _ in sorted(spans)], [b for _, b in sorted(spans)])
             for lane, spans in grouped.items()}
    lane_slices.cached = (events, lanes)  # type: ignore[attr-defined]
    return events, lanes


def async_problems(events: list[dict[str, Any]]) -> list[str]:
    """Async events (b, n, e): an id and a category each; every begin ended, once."""
    problems = [f"async event without id or cat {e}" for e in events
                if e["ph"] in ("b", "n", "e") and ("id" not in e or "cat" not in e)]
    opened: dict[tuple[Any, ...], int] = defaultdict(int)
    for e in sorted((e for e in events if e["ph"] in ("b", "e") and "id" in e),
                    key=lambda e: (e["ts"], e["ph"] == "b")):
        key = (e.get("cat"), e["id"], e["name"])
        opened[key] += 1 if e["ph"] == "b" else -1
        if opened[key] < 0:
            problems.append(f"async end before its begin {e}")
    return problems + [f"async {key} never ends" for key, count in opened.items() if count > 0]


def bound_flow_problems(events: list[dict[str, Any]]) -> list[str]:
    """Flows bound to slices (v2: ``bind_id`` with ``flow_out``/``flow_in`` on an X event):
    each id leaves one slice and enters at least one."""
    outs: dict[Any, int] = defaultdict(int)
    ins: dict[Any, int] = defaultdict(int)
    problems = []
    for e in events:
        if "bind_id" in e:
            if e["ph"] != "X" or not (e.get("flow_out") or e.get("flow_in")):
                problems.append(f"bind_id on an event that is no slice with a flow {e}")
            outs[e["bind_id"]] += bool(e.get("flow_out"))
            ins[e["bind_id"]] += bool(e.get("flow_in"))
    return problems + [f"bound flow {i}: {outs[i]} out, {ins[i]} in"
                       for i in set(outs) | set(ins) if outs[i] != 1 or ins[i] < 1]


@pytest.fixture(scope="module", params=NAMES)
def exported(request: pytest.FixtureRequest) -> Exported:
    return request.param, to_chrome_trace(real(request.param))


def test_structure_follows_the_format(exported: Exported) -> None:
    _, trace = exported
    assert structure_problems(trace) == []
    assert trace["displayTimeUnit"] in ("ms", "ns")
    json.dumps(trace, allow_nan=False)


def host_pids(report: Report) -> dict[int, Trace]:
    """Each trace of the report by the pid of its host process (rank N's is 100N+1)."""
    return {100 * max(rank, 0) + 1: report.trace_of(rank) for rank in report.ranks or [-1]}


def offsets(report: Report) -> dict[int, int]:
    """Where each host process's times start on the job's axis (0 for a single process)."""
    clock = job_clock({rank: report.trace_of(rank) for rank in report.ranks})
    return {100 * max(rank, 0) + 1: clock.offset(rank) for rank in report.ranks or [-1]}


def test_timestamps_are_microseconds_from_the_run_start(exported: Exported) -> None:
    """...of the job's first rank, for every rank of a distributed run."""
    name, trace = exported
    moved = offsets(real(name))
    for pid, recorded in host_pids(real(name)).items():
        spans = [e for e in trace["traceEvents"] if e.get("cat") == "phase" and e["pid"] == pid]
        assert [(e["ts"], e["dur"]) for e in spans] == [
            ((p.start + moved[pid]) / 1000, (p.end - p.start) / 1000) for p in recorded.phases]


def _events(trace: dict[str, Any], ph: str, cat: str) -> list[dict[str, Any]]:
    return [e for e in trace["traceEvents"] if e["ph"] == ph and e.get("cat") == cat]


def test_every_kind_of_event_is_on_its_lane(exported: Exported) -> None:
    name, trace = exported
    traces = list(host_pids(real(name)).values())

    def total(count: Any) -> int:
        return sum(count(recorded) for recorded in traces)

    assert len(_events(trace, "i", "sync")) == total(lambda t: len(t.tables["syncs"]))
    assert len(_events(trace, "i", "stream")) == total(lambda t: len(t.tables["stream_ops"]))
    assert len(_events(trace, "i", "exception")) == total(lambda t: len(t.exceptions))
    compile_events = _events(trace, "i", "compile") + _events(trace, "X", "compile")
    assert len(compile_events) == total(lambda t: len(t.compile_events))
    assert len(_events(trace, "X", "replay")) == total(lambda t: len(t.tables["replays"]))
    assert len(_events(trace, "X", "capture")) == total(lambda t: len(t.graphs))
    assert len(_events(trace, "X", "collective")) == total(lambda t: len(t.tables["collectives"]))
    timed = total(lambda t: sum(r.gpu >= 0 for r in t.tables["replays"]))
    assert len(_events(trace, "X", "gpu")) == timed
    opened = total(lambda t: len(replays_with_nodes(t)))
    assert len([e for e in trace["traceEvents"] if e["ph"] == "s"]) == timed + opened
    assert len(_events(trace, "X", "node")) == total(
        lambda t: sum(nodes_placed(t)[t.tables["replays"][i].graph]
                      for i in replays_with_nodes(t)))
    assert len(_events(trace, "X", "kernel")) == total(lambda t: len(t.tables["kernels"]))


def nodes_placed(trace: Trace) -> dict[int, int]:
    """The nodes each graph's replays open into (graphs whose nodes were kept)."""
    plans = {g.id: schedule(g.anatomy) for g in trace.graphs if g.anatomy is not None}
    return {graph: plan.placed for graph, plan in plans.items() if plan is not None}


def replays_with_nodes(trace: Trace) -> list[int]:
    """The timed replays whose nodes the export draws: in order, up to its budget."""
    placed, drawn, written = nodes_placed(trace), [], 0
    for index, replay in enumerate(trace.tables["replays"]):
        nodes = placed.get(replay.graph, 0) if replay.gpu >= 0 else 0
        if nodes and written + nodes <= MOST_NODE_SLICES:
            drawn.append(index)
            written += nodes
    return drawn


def test_memory_is_a_counter(exported: Exported) -> None:
    name, trace = exported
    moved = offsets(real(name))
    for pid, recorded in host_pids(real(name)).items():
        counters = [e for e in trace["traceEvents"]
                    if e["name"] == "CUDA memory (bytes)" and e["pid"] == pid]
        assert [(pytest.approx(c["ts"], abs=1e-3), c["args"]) for c in counters] == [
            ((s.t + moved[pid]) / 1000, {"allocated": s.allocated, "reserved": s.reserved})
            for s in recorded.tables["memory"]]


def test_one_lane_per_stream_and_per_thread() -> None:
    trace = to_chrome_trace(real("compile_graph_break"))
    lanes = {e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"}
    recorded = real("compile_graph_break").trace
    streams = set(recorded.tables["stream_ops"].column("stream"))
    streams |= {r.stream for r in recorded.tables["replays"] if r.gpu >= 0}
    assert {f"stream {s}" + (" (default)" if s == 0 else "") for s in streams} <= lanes
    assert {"phases", "graph captures", "thread 0", "torch.compile"} <= lanes


def _overlapping_trace() -> Trace:
    """Replays whose host calls overlap partly (as two threads' would, recorded as one)."""
    trace = Trace()
    trace.graphs = [Graph(0, "CUDAGraph", "captured", 0, 10)]
    for t, dur, gpu in ((100, 50, 500), (120, 60, 500), (130, 5, 500), (300, 10, -1)):
        trace.tables["replays"].append(Replay(t, dur, gpu, 0, 7, 0))
    return trace


def test_overlapping_slices_move_to_an_extra_lane() -> None:
    report = dataclasses.replace(real("empty_graph"), trace=_overlapping_trace())
    trace = to_chrome_trace(report)
    assert structure_problems(trace) == []
    lanes = {e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"}
    assert {"thread 0", "thread 0 (2)"} <= lanes
    gpu = sorted((e["ts"], e["dur"]) for e in _events(trace, "X", "gpu"))
    assert gpu == [(0.1, 0.5), (0.6, 0.5), (1.1, 0.5)]  # queued one after another on stream 7


def test_a_phase_filter_keeps_only_that_phase() -> None:
    report = real("launch_bound")
    whole = to_chrome_trace(report)
    replay_only = to_chrome_trace(report, phases=("replay",))
    assert structure_problems(replay_only) == []
    spans = [(p.start, p.end) for p in report.trace.phases if p.phase == "replay"]
    for event in replay_only["traceEvents"]:
        if event["ph"] in ("X", "i", "C"):
            start = round(event["ts"] * 1000)
            end = start + round(event.get("dur", 0) * 1000)
            assert any(start < b and end >= a for a, b in spans), event
    assert 0 < len(replay_only["traceEvents"]) < len(whole["traceEvents"])
    assert replay_only["otherData"]["phases"] == "replay"
