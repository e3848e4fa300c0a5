"""The rows of host values frozen into graphs (``frozen_values``), read the one way both
rules that tell of them read them: GD305 the numbers taken by value, GD306 the rest of the
host state a capture read.

A watched value's rows are its changes in the order recorded; it is stale where some replay
of its graph ran after a change to another value (it ran with the old one). Several graphs
captured at one line, each with its own value of the same name (a graph per batch size, a
graph per mode), hold their values by design: none of them is told of the others'.
"""

from __future__ import annotations

from collections.abc import Collection

from graphdoctor.diagnose.view import TraceView
from graphdoctor.trace.event_kinds import TENSOR_VALUE, FrozenValue
from graphdoctor.trace.names import SEEN_AT_END, SEEN_EAGER

KIND = "frozen_values"
Row = tuple[int, FrozenValue]  # (index in the table, row): what evidence points at


def rows(view: TraceView, uses: Collection[str]) -> list[Row]:
    return [(i, r) for i, r in view.rows(KIND) if r.use in uses]


def by_graph(view: TraceView, uses: Collection[str]) -> dict[int, list[list[Row]]]:
    """Each graph's watched values of these uses, each with its rows in the order recorded,
    less those a graph per value holds by design."""
    per_value = graph_per_value(view, uses)
    rows_of: dict[tuple[int, str, str, str], list[Row]] = {}
    for index, row in rows(view, uses):
        if (row.graph, row.name) not in per_value:
            rows_of.setdefault((row.graph, row.name, row.owner, row.use), []).append(
                (index, row))
    found: dict[int, list[list[Row]]] = {}
    for (graph_id, _, _, _), each in rows_of.items():
        found.setdefault(graph_id, []).append(each)
    return found


def graph_per_value(view: TraceView, uses: Collection[str]) -> set[tuple[int, str]]:
    """(graph, name) of the values that several graphs captured at one line each froze at
    a value of its own (``for i in range(8): with torch.cuda.graph(g): ... + i``, a graph per
    batch size, one per mode): each graph keeps its own value by design, and the loop moving
    on is not a change any of them should have followed."""
    captured: dict[tuple[str, str], dict[int, str]] = {}
    for _, row in rows(view, uses):
        graph = view.graph(row.graph)
        if graph is not None:
            site = (view.where(graph.stack), row.name)
            captured.setdefault(site, {})[row.graph] = row.captured
    return {(graph, name) for (_, name), values in captured.items()
            if len(values) > 1 and len(set(values.values())) > 1 for graph in values}


def later(rows_of_value: list[Row]) -> list[Row]:
    """The value's changes after the capture, in time order (a tensor now claims nothing)."""
    return sorted(((i, r) for i, r in rows_of_value
                   if r.seen != SEEN_EAGER and is_value(r.value)), key=lambda item: item[1].t)


def stale(rows_of_value: list[Row], replays: int) -> bool:
    """Whether some replay ran after the value changed: then it ran with the old one."""
    return any(r.value != r.captured and replays > r.replays for _, r in later(rows_of_value))


def first_stale(rows_of_value: list[Row], replays: int) -> FrozenValue:
    """The first change some replay ran after."""
    return next(r for _, r in later(rows_of_value)
                if r.value != r.captured and replays > r.replays)


def ran_changed(rows_of_value: list[Row], replays: int) -> FrozenValue | None:
    """The first change some replay ran under before the value came back (a module put in
    eval mode for an eager validation and back in train mode before the next replay ran
    none), going by the changes seen along the way (not at the end, which may follow the
    last replay); None where no replay did."""
    seen = [r for _, r in later(rows_of_value) if r.seen != SEEN_AT_END]
    for index, row in enumerate(seen):
        until = seen[index + 1].replays if index + 1 < len(seen) else replays
        if row.value != row.captured and until > row.replays:
            return row
    return None


def is_value(shown: str) -> bool:
    """Whether a recorded value is still a value, not the tensor the script moved a number
    into (whose value the recorder does not read, and the rules claim nothing about)."""
    return not shown.startswith(TENSOR_VALUE)
