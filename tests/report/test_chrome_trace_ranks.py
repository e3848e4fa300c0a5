"""The Chrome trace of a distributed run: every rank, each in processes of its own, with its
collectives on the lanes of the threads that made them."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from typing import Any

import pytest

from graphdoctor.facts.job_clock import job_clock
from graphdoctor.report.document import Report
from graphdoctor.report.render.chrome_trace import to_chrome_trace
from graphdoctor.trace.model import Collective, Table
from tests.report.helpers import real
from tests.report.test_chrome_trace import structure_problems

DISTRIBUTED = ["dist_healthy_capture", "dist_extra_allreduce_in_capture",
               "dist_rank_capture_fails"]
HUNG = "dist_extra_allreduce_in_capture"


def events(trace: dict[str, Any], **equal: Any) -> list[dict[str, Any]]:
    return [e for e in trace["traceEvents"] if all(e.get(k) == v for k, v in equal.items())]


def process_names(trace: dict[str, Any]) -> dict[int, str]:
    return {e["pid"]: e["args"]["name"] for e in events(trace, ph="M", name="process_name")}


def lane_names(trace: dict[str, Any]) -> dict[tuple[int, int], str]:
    return {(e["pid"], e["tid"]): e["args"]["name"]
            for e in events(trace, ph="M", name="thread_name")}


@pytest.mark.parametrize("name", DISTRIBUTED)
def test_every_rank_has_its_own_host_and_gpu_processes(name: str) -> None:
    trace = to_chrome_trace(real(name))
    assert structure_problems(trace) == []
    target = real(name).trace.meta.target
    assert process_names(trace) == {1: f"rank 0 host: {target}", 10: "rank 0 GPU 0: NVIDIA H200",
                                    101: f"rank 1 host: {target}",
                                    111: "rank 1 GPU 1: NVIDIA H200"}
    assert trace["otherData"]["ranks"] == "0, 1" and trace["otherData"]["backend"] == "nccl"


@pytest.mark.parametrize("name", DISTRIBUTED)
def test_each_lane_has_one_pid_and_tid_and_each_rank_the_same_lanes(name: str) -> None:
    trace = to_chrome_trace(real(name))
    lanes = lane_names(trace)
    tids = [tid for _, tid in lanes]
    assert len(tids) == len(set(tids))  # no tid is shared, even across processes
    by_process: dict[int, set[str]] = defaultdict(set)
    for (pid, _), lane in lanes.items():
        by_process[pid].add(lane)
    assert {"phases", "graph captures", "thread 0"} <= by_process[1]
    assert by_process[1] == by_process[101]
    assert all((e["pid"], e["tid"]) in lanes for e in trace["traceEvents"]
               if e["ph"] in ("X", "i", "s", "f"))


def test_counters_of_a_rank_are_for_the_gpu_it_used() -> None:
    trace = to_chrome_trace(real(HUNG))
    for pid, device in ((10, 0), (111, 1)):
        samples = [s for s in real(HUNG).trace_of(pid // 100).tables["gpu_samples"]
                   if s.device == device]
        assert len(events(trace, ph="C", pid=pid, name="utilisation (%)")) == len(samples)
    assert not events(trace, ph="C", pid=11) and not events(trace, ph="C", pid=110)


def test_collectives_are_slices_on_their_threads_lane() -> None:
    trace = to_chrome_trace(real(HUNG))
    lanes = lane_names(trace)
    clock = job_clock({rank: real(HUNG).trace_of(rank) for rank in (0, 1)})
    assert clock.offset(1) > 0  # rank 1 started after rank 0: its slices move by as much
    for rank, pid in ((0, 1), (1, 101)):
        recorded = real(HUNG).trace_of(rank).tables["collectives"]
        exported = events(trace, ph="X", cat="collective", pid=pid)
        assert sorted((e["ts"], e["dur"]) for e in exported) == sorted(
            ((c.t + clock.offset(rank)) / 1000, c.dur / 1000) for c in recorded)
        assert {lanes[(pid, e["tid"])] for e in exported} == {"thread 0"}
    extra = events(trace, ph="X", cat="collective", pid=101, name="all_reduce #4 (captured)")
    assert len(extra) == 1 and extra[0]["args"]["graph"] == 0
    assert not events(trace, ph="X", cat="collective", pid=1, name="all_reduce #4 (captured)")


def test_a_teardown_that_never_returned_runs_to_the_end_with_a_note() -> None:
    trace = to_chrome_trace(real(HUNG))
    [hung] = events(trace, ph="X", cat="teardown", pid=1)
    rank0 = real(HUNG).trace_of(0)
    assert hung["name"] == "destroy_process_group (never returned)"
    assert hung["args"]["note"].startswith("never returned")
    assert hung["ts"] + hung["dur"] == pytest.approx(rank0.status.wall_ns / 1000, abs=0.002)
    assert not events(trace, ph="X", cat="teardown", pid=101)  # rank 1 never got there
    healthy = to_chrome_trace(real("dist_healthy_capture"))
    returned = events(healthy, ph="X", cat="teardown")
    assert [e["name"] for e in returned] == ["destroy_process_group"] * 2
    assert all("note" not in e["args"] for e in returned)


def with_pending_collective(report: Report) -> Report:
    """Rank 1's second collective never returned (as when its peer never issues it)."""
    rank1 = report.trace_of(1)
    rows = list(rank1.tables["collectives"])
    rows[1] = rows[1]._replace(dur=-1)
    table = Table(Collective)
    for row in rows:
        table.append(row)
    tables = {**rank1.tables, "collectives": table}
    return dataclasses.replace(report, other_ranks={1: dataclasses.replace(rank1, tables=tables)})


def test_a_collective_that_never_returned_is_open_to_the_end_and_still_nests() -> None:
    report = with_pending_collective(real("dist_healthy_capture"))
    trace = to_chrome_trace(report)
    assert structure_problems(trace) == []  # it overlaps later slices: they move lane
    [pending] = [e for e in events(trace, ph="X", cat="collective", pid=101)
                 if "note" in e["args"]]
    assert pending["name"] == "all_reduce #1 (never returned)"
    assert pending["ts"] + pending["dur"] == pytest.approx(
        report.trace_of(1).status.wall_ns / 1000, abs=0.002)


def test_flows_stay_within_their_rank() -> None:
    trace = to_chrome_trace(real("dist_healthy_capture"))
    starts, ends = events(trace, ph="s"), events(trace, ph="f")
    assert len(starts) == len({e["id"] for e in starts}) == len(ends) > 0
    end_pids = {e["id"]: e["pid"] for e in ends}
    assert {s["pid"] // 100 for s in starts} == {0, 1}
    assert all(s["pid"] // 100 == end_pids[s["id"]] // 100 for s in starts)


def test_a_single_process_export_keeps_its_process_numbers_and_names() -> None:
    trace = to_chrome_trace(real("launch_bound"))
    names = process_names(trace)
    devices = {s.device for s in real("launch_bound").trace.tables["gpu_samples"]}
    assert set(names) == {1, *(10 + d for d in devices)}  # every GPU NVML read: one process
    assert not any(n.startswith("rank") for n in names.values())
    assert "ranks" not in trace["otherData"]
