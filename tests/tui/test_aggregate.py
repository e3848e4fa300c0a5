"""Allocation totals and graph timings agree with the recorded rows."""

from __future__ import annotations

import statistics

import pytest

from graphdoctor.tui.aggregate import graph_rows, group_allocs, sort_groups
from tests.reports import report_for


@pytest.mark.parametrize("by", ["phase", "pool", "site"])
def test_groups_add_up_to_the_whole_table(by: str) -> None:
    trace = report_for("many_private_pools").trace
    data = trace.tables["allocs"].data
    groups = group_allocs(trace, by)
    allocated = sum(s for a, s in zip(data["action"], data["size"], strict=True) if a == "alloc")
    assert sum(g.allocated for g in groups) == allocated
    assert sum(g.allocs for g in groups) == data["action"].count("alloc")
    assert sum(g.frees for g in groups) == data["action"].count("free_completed")
    for group in groups:
        if group.largest_row >= 0:
            assert data["size"][group.largest_row] == group.largest


def test_private_pools_are_one_group_each() -> None:
    trace = report_for("many_private_pools").trace
    pools = {g.key for g in group_allocs(trace, "pool")}
    assert {g.pool for g in trace.graphs} <= pools


def test_call_sites_are_the_users_lines() -> None:
    groups = group_allocs(report_for("launch_bound").trace, "site")
    # what the capture left in its pool, read at its end: the user's capture line
    assert groups[0].key == "launch_bound.py:24 in <module>"


def test_sorting_by_any_column() -> None:
    groups = group_allocs(report_for("many_private_pools").trace, "pool")
    by_key = sort_groups(groups, "key")
    assert [g.key for g in by_key] == sorted(g.key for g in groups)
    by_net = sort_groups(groups, "net", descending=True)
    assert [g.net for g in by_net] == sorted((g.net for g in groups), reverse=True)


def test_graph_rows_carry_replay_and_eager_medians() -> None:
    trace = report_for("launch_bound").trace
    row = graph_rows(trace)[0]
    replays = trace.tables["replays"].data
    assert row.replays.count == len(replays["t"]) == 1000
    assert row.replays.host == statistics.median(replays["dur"])
    assert row.eager.count == 1002 and row.function == "step"  # with 2 of its 3 warm-ups
    assert row.first_replay == 0
