"""The diagnosis of a run with many graphs reads each recorded row a bounded number of times.

A soak of 1,000 graphs replayed a million times (``bench/soak.py``) recorded fine, but its
report never came: each graph's measurement scanned every replay of the run, making a row
of each, a thousand times over (minutes for 20,000 timed replays). Counted here, not timed:
the rows the diagnosis makes grow with the run's rows, not with graphs times rows."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from graphdoctor.diagnose import diagnose
from graphdoctor.trace.event_kinds import Table
from graphdoctor.trace.model import Replay
from tests.report.many_graphs import many_graphs_trace


def rows_made(graphs: int) -> int:
    """How many rows of the trace's tables the diagnosis of ``graphs`` graphs makes."""
    trace = many_graphs_trace(graphs)
    made = [0]
    for table in trace.tables.values():
        table._make = _counted(table._make, made)
    diagnose(trace)
    return made[0]


def _counted(make: Callable[[Iterable[Any]], Any], made: list[int]) -> Callable[..., Any]:
    def counting(values: Iterable[Any]) -> Any:
        made[0] += 1
        return make(values)
    return counting


def test_rows_made_grow_with_the_run_not_with_graphs_times_replays() -> None:
    small, large = rows_made(40), rows_made(320)
    assert small > 0
    assert large < small * 8 * 2, (small, large)  # 8x the graphs: linear is ~8x, not ~64x


def test_rows_where_follows_appends_and_a_replaced_column() -> None:
    table: Table[Replay] = Table(Replay)
    table.append(Replay(0, 1, 1, 3, 7, 0))
    assert [r.t for r in table.rows_where("graph", 3)] == [0]
    table.append(Replay(5, 1, 1, 3, 7, 0))
    table.append(Replay(9, 1, 1, 4, 7, 0))
    assert [r.t for r in table.rows_where("graph", 3)] == [0, 5]
    assert table.rows_where("graph", 99) == []
    assert [r.t for r in table.rows_where("graph", 4, 3, 4)] == [0, 5, 9], "in table order"
    assert table.rows_where("graph") == []
    table.data["graph"] = [4, 4, 3]  # a column put back in another order (assemble's sort)
    assert [r.t for r in table.rows_where("graph", 4)] == [0, 5]
