"""A tensor a graph reads was freed after capture, and the graph was replayed anyway.

A graph keeps the addresses its kernels read. Rebinding a captured input
(``x = torch.randn(...)`` instead of ``x.copy_(...)``) frees the old tensor; its memory goes
back to the allocator and is reused, and every later replay reads whatever lives there now.
Nothing raises: results are silently wrong or stale.

The line to change is the one that let the tensor go (``x = torch.randn(...)`` in the loop,
``del x``), not the captured line that read it: where the recorder saw the tensor object
die, that line is the finding's location, and the capture's read is named beside it. Where
it was not seen (the storage was freed some other way), the captured read is the location.

A name bound again while the old tensor lives on (a list of batches holds it: ``for x in
batches: g.replay()``) frees nothing: every replay reads the old tensor, and the new data is
never read. That is reported too, at the first line after the captured block that binds
the name again.

How to fix: keep every captured input alive as long as the graph, and feed new data with
``static_input.copy_(new)``.
"""

from __future__ import annotations

from collections.abc import Iterator

from graphdoctor.diagnose.findings import ERROR, UNSAFE, Finding, Rule
from graphdoctor.diagnose.view import TraceView, mib
from graphdoctor.trace.event_kinds import FREED, REBOUND, InputEvent
from graphdoctor.trace.model import NONE

ID, NAME = "GD302", "freed-captured-input"


def check(view: TraceView) -> Iterator[Finding]:
    for index, event in enumerate(view.trace.input_events):
        if event.kind == FREED:
            yield _freed(view, index, event)
        elif event.kind == REBOUND:
            yield _rebound(view, index, event)


def _freed(view: TraceView, index: int, event: InputEvent) -> Finding:
    used, dropped = view.where(event.stack), event.dropped
    let_go = f"; its last reference went at {view.where(dropped)}" if dropped != NONE else ""
    return _finding(
        view, index, event, "dropped_at",
        title=f"graph {event.graph} reads a {mib(event.size)} tensor (used at {used}) that "
              f"was freed after capture{let_go}",
        explanation=(f"During capture, graph {event.graph} read a tensor at {used}. "
                     + (f"The last reference to it went at {view.where(dropped)} (a name "
                        "rebound or deleted there), and by " if dropped != NONE else "By ")
                     + f"replay {event.replays} its memory had been freed, so this replay "
                     "and every later one read memory the allocator may have given to "
                     "something else."),
        fix=("Keep captured inputs alive and update them in place: static_x.copy_(new_x)"
             + (f" at {view.where(dropped)}, instead of binding the name to a new tensor."
                if dropped != NONE else ".")))


def _rebound(view: TraceView, index: int, event: InputEvent) -> Finding:
    used, again = view.where(event.stack), event.dropped
    at = f" at {view.where(again)}" if again != NONE else ""
    return _finding(
        view, index, event, "bound_again_at",
        title=f"graph {event.graph} reads a {mib(event.size)} tensor (used at {used}) whose "
              f"name was bound to another tensor{at}: replays read the old one",
        explanation=(f"During capture, graph {event.graph} read a tensor at {used}. By replay "
                     f"{event.replays} that name held another tensor, while the captured one "
                     "lived on (something else still holds it), so every replay computes on "
                     "the old data and the new data is never read."),
        fix=f"Copy the new data into the captured tensor (static_x.copy_(new_x)){at}, "
            "instead of binding the name to another tensor.")


def _finding(view: TraceView, index: int, event: InputEvent, let_go_as: str, title: str,
             explanation: str, fix: str) -> Finding:
    """The finding of an input event, located where the name let go of the tensor where
    that is known (``let_go_as`` names that line in the measurements), else at the read."""
    let_go = event.dropped
    return RULE.finding(
        title=title, explanation=explanation, fix=fix,
        evidence=(view.evidence("input_events", index),)
        + ((view.evidence("graphs", event.graph),)
           if 0 <= event.graph < len(view.trace.graphs) else ()),
        location=view.location(let_go if let_go != NONE else event.stack), graph=event.graph,
        measurements={"bytes": event.size, "noticed_at_replay": event.replays,
                      "used_at": view.where(event.stack)}
        | ({let_go_as: view.where(let_go)} if let_go != NONE else {}))


RULE = Rule(ID, NAME, check, __doc__ or "", severity=ERROR, category=UNSAFE)
