"""Where a graph's nodes run within a replay: dependency order, rows, the longest chain."""

from __future__ import annotations

import pytest

from graphdoctor.facts.node_schedule import schedule
from graphdoctor.trace import anatomy as shapes
from graphdoctor.trace.anatomy import Anatomy, KernelGroup
from tests.reports import trace_for

KERNEL = shapes.NODE_TYPES.index(shapes.KERNEL)
EVENT_RECORD = shapes.NODE_TYPES.index(shapes.EVENT_RECORD)


def graph(kernels: list[int], edges: list[tuple[int, int]], groups: tuple[KernelGroup, ...],
          timed: bool = False, types: list[int] | None = None) -> Anatomy:
    """An anatomy whose node i runs kernel group ``kernels[i]``."""
    types = types or [KERNEL] * len(kernels)
    return Anatomy(len(kernels), len(edges), {shapes.KERNEL: len(kernels)}, groups,
                   nodes_kept=True, node_type=tuple(types), node_kernel=tuple(kernels),
                   edge_list=tuple(edges), profiled_replay_ns=100 if timed else -1)


def spans(found: Anatomy) -> dict[int, tuple[float, float, int, bool]]:
    plan = schedule(found)
    assert plan is not None
    return {n.node: (round(n.start, 3), round(n.end, 3), n.row, n.on_chain)
            for row in plan.rows for n in row.nodes}


def test_a_serial_chain_is_one_row_of_equal_shares_untimed() -> None:
    found = graph([0, 0, 1], [(0, 1), (1, 2)], (KernelGroup("mm", 2), KernelGroup("tanh", 1)))
    assert spans(found) == {0: (0.0, 0.333, 0, True), 1: (0.333, 0.667, 0, True),
                            2: (0.667, 1.0, 0, True)}
    plan = schedule(found)
    assert plan is not None and not plan.timed and plan.chain == 3


def test_a_fork_packs_into_two_rows_and_the_longer_branch_is_the_chain() -> None:
    # 0 forks to 1 (short) and 2 (long, a group of 60 ns per kernel), which join at 3
    groups = (KernelGroup("a", 2, 20), KernelGroup("short", 1, 10), KernelGroup("long", 1, 60))
    found = graph([0, 1, 2, 0], [(0, 1), (0, 2), (1, 3), (2, 3)], groups, timed=True)
    placed = spans(found)
    assert placed[0] == (0.0, 0.125, 0, True)  # 10 of 80 ns
    assert placed[1][2] != placed[2][2]  # side by side: two rows
    assert placed[2][:2] == (0.125, 0.875) and placed[2][3]  # the long branch is the chain
    assert not placed[1][3]
    assert placed[3] == (0.875, 1.0, 0, True)  # waits for the longer branch


def test_nodes_that_do_no_work_order_others_but_take_no_room() -> None:
    found = graph([0, -1, 0], [(0, 1), (1, 2)], (KernelGroup("mm", 2),),
                  types=[KERNEL, EVENT_RECORD, KERNEL])
    assert set(spans(found)) == {0, 2}


@pytest.mark.parametrize("change", [
    {"nodes_kept": False},  # only counts were kept: no order to lay out
    {"nodes": shapes.MAX_STRUCTURE + 1},  # a report claiming more than a recording keeps
])
def test_no_schedule_without_the_nodes(change: dict[str, object]) -> None:
    found = graph([0, 0], [(0, 1)], (KernelGroup("mm", 2),))
    assert schedule(Anatomy(**{**found.__dict__, **change})) is None  # type: ignore[arg-type]


def test_a_cycle_a_graph_cannot_have_still_ends() -> None:
    found = graph([0, 0, 0], [(0, 1), (1, 2), (2, 0)], (KernelGroup("mm", 3),))
    plan = schedule(found)
    assert plan is not None and plan.placed == 3


def test_recorded_graphs_laid_out() -> None:
    launch = trace_for("launch_bound").graphs[0].anatomy
    assert launch is not None
    plan = schedule(launch)  # 400 kernels one after another, untimed
    assert plan is not None and len(plan.rows) == 1 and plan.chain == 400 and not plan.timed
    gpu = trace_for("gpu_bound").graphs[0].anatomy  # recorded with --full: kernel times
    assert gpu is not None
    timed = schedule(gpu)
    assert timed is not None and timed.timed
    lengths = {round(n.end - n.start, 3) for n in timed.rows[0].nodes}
    assert len(lengths) > 1  # the matmuls and the memsets differ
