"""One time axis for a job's ranks: a host's ranks by their wall clock, other hosts set by
the barriers every rank left together. Small hand-made traces: the arithmetic is the point."""

from __future__ import annotations

import dataclasses

from graphdoctor.facts.job_clock import OWN_STARTS, job_clock
from graphdoctor.trace.model import Collective, Meta, RunStatus, Table, Trace

SECOND = 10**9
MS = 10**6


def rank_trace(host: str, clock: int, barriers: tuple[tuple[int, int], ...] = (),
               op: str = "barrier") -> Trace:
    """A rank on ``host`` whose wall clock read ``clock`` at its start; ``barriers``: (t, dur)
    of each barrier in its own times."""
    table = Table(Collective)
    for seq, (t, dur) in enumerate(barriers):
        table.append(Collective(t, dur, op, "default", seq, 0, -1, 0, 0))
    trace = Trace(meta=Meta(hostname=host, clock_unix_ns=clock, rank=0, world_size=4),
                  status=RunStatus(complete=True, wall_ns=10 * SECOND))
    trace.tables = {**trace.tables, "collectives": table}
    return trace


def test_ranks_of_one_host_are_set_by_their_wall_clocks() -> None:
    start = 1_700_000_000 * SECOND
    clock = job_clock({0: rank_trace("a", start + 250 * MS), 1: rank_trace("a", start)})
    assert clock.offsets == {0: 250 * MS, 1: 0}
    assert clock.hosts == {"a": (0, 1)}
    assert clock.how == ("host a: ranks set by their wall clock at start",)


def test_a_second_host_whose_clock_is_off_is_set_by_the_barriers_left_together() -> None:
    start = 1_700_000_000 * SECOND
    skew = 7 * MS  # host b's clock runs 7 ms ahead of host a's
    # Both ranks really start together and leave each barrier at 1 s and 2 s (give or take
    # 20 µs); rank 1's clock reads 7 ms later.
    a = rank_trace("a", start, ((900 * MS, 100 * MS), (1900 * MS, 100 * MS)))
    b = rank_trace("b", start + skew, ((950 * MS, 50 * MS + 20_000), (1990 * MS, 10 * MS)))
    clock = job_clock({0: a, 1: b})
    # the two starts, really together, land within the barriers' own disagreement
    assert abs(clock.offsets[1] - clock.offsets[0]) <= 20_000 and min(clock.offsets.values()) == 0
    assert clock.how[1].startswith("host b: moved -7.01 ms to line up 2 barriers")
    assert "agree within 20 µs" in clock.how[1]


def test_without_a_shared_barrier_a_host_keeps_its_own_wall_clock_and_says_so() -> None:
    start = 1_700_000_000 * SECOND
    a = rank_trace("a", start, ((SECOND, MS),), op="all_reduce")  # returns at once: no use
    b = rank_trace("b", start + 3 * MS, ((SECOND, MS),), op="all_reduce")
    clock = job_clock({0: a, 1: b})
    assert clock.offsets == {0: 0, 1: 3 * MS}
    assert clock.how[1] == ("host b: their own wall clock (no barrier shared with the first host "
                            "to set it by)")


def test_traces_recorded_without_a_wall_clock_each_count_from_their_own_start() -> None:
    old = rank_trace("a", 0)
    new = rank_trace("a", 1_700_000_000 * SECOND)
    clock = job_clock({0: old, 1: new})
    assert clock.offsets == {0: 0, 1: 0} and clock.how == (OWN_STARTS,)


def test_a_single_process_has_nothing_to_line_up() -> None:
    assert job_clock({}).offsets == {} and job_clock({}).how == ()


def test_a_barrier_captured_into_a_graph_or_never_left_does_not_count() -> None:
    start = 1_700_000_000 * SECOND
    a = rank_trace("a", start, ((SECOND, MS),))
    b = rank_trace("b", start + 5 * MS, ((SECOND, -1),))  # never returned
    clock = job_clock({0: a, 1: b})
    assert clock.offsets[1] == 5 * MS
    captured = rank_trace("b", start + 5 * MS, ((SECOND, MS),))
    rows = [row._replace(graph=0) for row in captured.tables["collectives"]]
    table = Table(Collective)
    for row in rows:
        table.append(row)
    captured = dataclasses.replace(captured, tables={**captured.tables, "collectives": table})
    assert job_clock({0: a, 1: captured}).offsets[1] == 5 * MS


def test_many_hosts_set_by_barriers_are_said_in_one_line() -> None:
    start = 1_700_000_000 * SECOND
    traces = {rank: rank_trace(f"node{rank}", start + rank * MS, ((SECOND, MS),))
              for rank in range(8)}
    clock = job_clock(traces)
    assert clock.how == ("host node0: ranks set by their wall clock at start",
                         "7 other hosts: moved -7 ms to -1 ms to line up the barriers they "
                         "left with the first host (at least 1 each, agreeing within 0 ns)")
    assert set(clock.offsets.values()) == {0}  # they all left the barrier at once
