"""What ran on the GPU in the Chrome trace: each timed replay's graph nodes where the
timeline draws them, arrows from the launch to the replay and to its first kernel, and a
structure check that can fail (each of its rules broken once, and caught)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from graphdoctor.facts.node_schedule import schedule
from graphdoctor.report.render.chrome_gpu import MOST_NODE_SLICES, NODE_FLOW
from graphdoctor.report.render.chrome_trace import to_chrome_trace
from tests.report.helpers import real
from tests.report.test_chrome_trace import structure_problems

Event = dict[str, Any]


@pytest.fixture(scope="module")
def launch_bound() -> dict[str, Any]:
    """400 kernels a replay, 1,000 replays timed: more nodes than the export draws."""
    return to_chrome_trace(real("launch_bound"))


def lane_names(events: list[Event]) -> dict[tuple[int, int], str]:
    return {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["name"] == "thread_name"}


def test_nodes_lie_inside_their_replay_on_tracks_beside_its_stream(
        launch_bound: dict[str, Any]) -> None:
    events = launch_bound["traceEvents"]
    names = lane_names(events)
    replays = sorted((e for e in events if e.get("cat") == "gpu"), key=lambda e: e["ts"])
    nodes = [e for e in events if e.get("cat") == "node"]
    assert len(nodes) == MOST_NODE_SLICES  # 625 replays of 400 nodes, then the budget
    assert {names[(e["pid"], e["tid"])] for e in nodes} == {
        "stream 0 (default) nodes (estimated, equal shares)"}  # recorded without --full
    first = replays[0]
    inside = [e for e in nodes if first["ts"] <= e["ts"] < first["ts"] + first["dur"]]
    assert len(inside) == 400
    assert max(e["ts"] + e["dur"] for e in inside) == pytest.approx(first["ts"] + first["dur"],
                                                                     abs=2e-3)
    assert {e["name"] for e in inside} == {"vectorized_elementwise_kernel<tanh_kernel_cuda>",
                                           "nvjet_sm90_tst_64x8_64x16_1x4_h_bz_NNT"}
    assert all(e["args"]["chain"] for e in inside)  # one chain: every node on it
    assert "left out of 375 more" in launch_bound["otherData"]["graph_nodes"]


def test_each_launch_has_arrows_to_its_replay_and_its_first_kernel(
        launch_bound: dict[str, Any]) -> None:
    events = launch_bound["traceEvents"]
    names = lane_names(events)
    ends = {e["id"]: e for e in events if e["ph"] == "f"}
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    assert len(ends) == 1000 + 625
    to_node = ends[NODE_FLOW + 0]
    assert names[(to_node["pid"], to_node["tid"])].endswith("nodes (estimated, equal shares)")
    assert starts[NODE_FLOW + 0]["ts"] == starts[0]["ts"]  # both leave the host's replay()
    host = next(e for e in events if e.get("cat") == "replay")
    assert starts[0]["ts"] == host["ts"] and names[(host["pid"], host["tid"])] == "thread 0"


def test_a_graph_without_its_nodes_has_its_spans_and_no_node_tracks() -> None:
    report = real("item_in_capture")  # the capture failed: nothing replayed
    events = to_chrome_trace(report)["traceEvents"]
    assert not [e for e in events if e.get("cat") == "node"]
    assert to_chrome_trace(report)["otherData"]["graph_nodes"].startswith("none")


@pytest.mark.parametrize("name", ["real_graphed_callables_autocast", "host_node_in_capture",
                                  "cupy_capture"])
def test_every_graph_with_nodes_opens_in_every_replay_within_the_budget(name: str) -> None:
    report = real(name)
    exported = to_chrome_trace(report)
    assert structure_problems(exported) == []
    placed = {g.id: plan.placed for g in report.trace.graphs if g.anatomy is not None
              for plan in [schedule(g.anatomy)] if plan is not None}
    timed = [r for r in report.trace.tables["replays"] if r.gpu >= 0]
    nodes = [e for e in exported["traceEvents"] if e.get("cat") == "node"]
    assert len(nodes) == sum(placed.get(r.graph, 0) for r in timed) > 0


def broken(trace: dict[str, Any], change: str) -> dict[str, Any]:
    """A copy of ``trace`` with one rule of the format broken."""
    trace = copy.deepcopy(trace)
    events: list[Event] = trace["traceEvents"]
    flow_end = next(e for e in events if e["ph"] == "f")
    slice_ = next(e for e in events if e["ph"] == "X" and e["dur"] > 1)
    if change == "unended flow":
        events.remove(flow_end)
    elif change == "flow end outside any slice":
        flow_end["ts"] += 1e9
    elif change == "flow without an id":
        del flow_end["id"]
    elif change == "partial overlap":
        events.append({**slice_, "ts": slice_["ts"] + slice_["dur"] / 2, "dur": slice_["dur"]})
    elif change == "unmatched async begin":
        events.append({"ph": "b", "pid": 1, "tid": 1, "name": "x", "cat": "a", "id": 7,
                       "ts": 1.0})
    elif change == "bind_id without a flow":
        events.append({**slice_, "bind_id": 9, "flow_out": True})
    elif change == "negative duration":
        slice_["dur"] = -1.0
    elif change == "unknown phase":
        events.append({**slice_, "ph": "Q"})
    return trace


@pytest.mark.parametrize("change", ["unended flow", "flow end outside any slice",
                                    "flow without an id", "partial overlap",
                                    "unmatched async begin", "bind_id without a flow",
                                    "negative duration", "unknown phase"])
def test_the_structure_check_catches_each_broken_rule(change: str) -> None:
    trace = to_chrome_trace(real("tiny_graph"))
    assert structure_problems(trace) == []
    assert structure_problems(broken(trace, change)) != []
