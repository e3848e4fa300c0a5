"""The script keeps a captured graph's output from one replay to the next, and the next replay
overwrites it.

A graph writes its outputs into the same memory at every replay. Keeping the output tensor
(``generated.append(static_next)``, ``history[t] = static_out``, ``self.prev = static_out``)
keeps a name for that memory, not the values it held: every entry of the list is the same
tensor, showing the last replay's result, and a "previous" output read after the next
replay is the current one. Nothing raises; a decoded sequence comes out as its last token
repeated. Reading the output before the next replay is right.

How to fix: keep a copy, ``generated.append(static_next.clone())`` (or copy into a buffer of
the script's own: ``tokens[:, t].copy_(static_next)``), or read what is needed (``.item()``,
``.cpu()``) before the next replay.
"""

from __future__ import annotations

from collections.abc import Iterator

from graphdoctor.diagnose.findings import ERROR, UNSAFE, Finding, Rule
from graphdoctor.diagnose.view import TraceView, mib
from graphdoctor.trace.event_kinds import KeptOutput
from graphdoctor.trace.names import KEPT_IN_ATTRIBUTE, KEPT_IN_DICT, KEPT_IN_LIST

ID, NAME = "GD307", "output-kept-across-replays"
KIND = "kept_outputs"
OVERWRITES = ("a graph writes its outputs into the same memory at every replay, so a kept "
              "output tensor shows the latest replay's values, not the ones it held when "
              "kept.")


def check(view: TraceView) -> Iterator[Finding]:
    for index, row in view.rows(KIND):
        graph = view.graph(row.graph)
        if graph is not None:
            yield _finding(view, index, row)


def _finding(view: TraceView, index: int, row: KeptOutput) -> Finding:
    kept = view.location(row.stack)
    where = f" at {view.where(row.stack)}" if kept is not None else ""
    return RULE.finding(
        title=f"graph {row.graph}'s output {row.name} is kept across replays in "
              f"{row.holder}{where}",
        explanation=(f"{_how(row)}, {_seen(row)}: {OVERWRITES}{_read(view, row)}"),
        fix=_fix(row), evidence=(view.evidence(KIND, index, row.holder),),
        location=kept if kept is not None else view.location(_graph_stack(view, row)),
        graph=row.graph,
        measurements={"output": row.name, "holder": row.holder, "how": row.how,
                      "aliases": row.aliases, "bytes": row.size, "replays": row.replays})


def _how(row: KeptOutput) -> str:
    if row.how in (KEPT_IN_LIST, KEPT_IN_DICT):
        entries = "entries" if row.how == KEPT_IN_LIST else "values"
        return (f"{row.aliases} {entries} of {row.holder} are graph {row.graph}'s output "
                f"{row.name} itself ({mib(row.size)} written again at every replay)")
    what = "attribute" if row.how == KEPT_IN_ATTRIBUTE else "name"
    return (f"The {what} {row.holder} holds graph {row.graph}'s output {row.name} itself "
            f"({mib(row.size)} written again at every replay)")


def _seen(row: KeptOutput) -> str:
    return f"seen at replay {row.replays}"


def _read(view: TraceView, row: KeptOutput) -> str:
    if view.location(row.read) is None:
        return ""
    return (f" {view.where(row.read)} reads {row.holder} after a replay that came after it "
            f"was kept.")


def _fix(row: KeptOutput) -> str:
    kept = f"{row.name}.clone()"
    if row.how == KEPT_IN_LIST:
        example = f"{row.holder}.append({kept})"
    elif row.how == KEPT_IN_DICT:
        example = f"{row.holder}[key] = {kept}"
    else:
        example = f"{row.holder} = {kept}"
    return (f"Keep a copy: {example} (or copy it into a buffer of your own, "
            f"buffer.copy_({row.name})), or read what you need from it before the next "
            "replay.")


def _graph_stack(view: TraceView, row: KeptOutput) -> int:
    graph = view.graph(row.graph)
    return graph.stack if graph is not None else -1


RULE = Rule(ID, NAME, check, __doc__ or "", severity=ERROR, category=UNSAFE)
