"""A graph replays host state the script changed after the capture: a module's mode, its
hooks or its weights' memory, a Python value that picked a tensor or a branch.

A capture records kernels, not the Python that chose them. What the captured code decided
from the host while it ran is fixed in the graph: dropout and batch norm by the module's
``training`` flag, autograd by ``requires_grad``, which hooks ran, which buffer
``self.outs[self.slot]`` picked, which side of ``if self.calibrate:`` ran, which kernels
TF32 allowed; and the kernels read the weights at the addresses they had. Changing any of
these afterwards (``model.eval()``, ``p.requires_grad_(False)``, a new hook,
``load_state_dict(..., assign=True)``, ``self.slot ^= 1``, ``self.calibrate = True``)
changes nothing a replay does, and nothing raises. graphdoctor names what the capture read
and where, what it was then and became, and the line that changed it. A change undone
before the next replay (``model.eval()`` for an eager validation, ``model.train()`` after
it) is no finding, nor is one seen only when the run ended (it may have followed the last
replay).

How to fix: capture in the state the replays need (``model.eval()`` before capturing an
inference graph), or capture one graph per state and replay the one that matches
(``graphs[model.training].replay()``, ``graphs[slot].replay()``); move a choice the graph
must follow onto the GPU (a device tensor it reads, filled before each replay); update
weights in place (``p.copy_(new)``); or capture again after each change.
"""

from __future__ import annotations

from collections.abc import Iterator

from graphdoctor.diagnose import frozen_rows
from graphdoctor.diagnose.findings import ERROR, UNSAFE, WARNING, Finding, Rule
from graphdoctor.diagnose.frozen_rows import KIND, Row
from graphdoctor.diagnose.view import TraceView
from graphdoctor.facts import queries
from graphdoctor.trace.event_kinds import FrozenValue
from graphdoctor.trace.model import Graph
from graphdoctor.trace.names import (
    HOST_STATE_USES,
    USE_BACKEND,
    USE_BRANCH,
    USE_GRAD,
    USE_HOOKS,
    USE_INDEX,
    USE_MODE,
    USE_WEIGHTS,
)
from graphdoctor.units import counted

ID, NAME = "GD306", "frozen-host-state"
RECORDED = ("a capture records kernels, not the Python that chose them: a replay runs what "
            "the capture's code chose then, whatever the script holds now.")


def check(view: TraceView) -> Iterator[Finding]:
    for graph_id, values in frozen_rows.by_graph(view, HOST_STATE_USES).items():
        graph = view.graph(graph_id)
        if graph is None:
            continue
        replays = queries.replay_count(view.trace, graph)
        for rows in values:
            first = frozen_rows.ran_changed(rows, replays)
            if first is not None:
                yield _finding(view, graph, first, frozen_rows.later(rows), replays)


def _finding(view: TraceView, graph: Graph, first: FrozenValue, later: list[Row],
             replays: int) -> Finding:
    """``first``: the first change replays ran under; ``later``: every change seen."""
    latest = later[-1][1]
    after = replays - first.replays
    changed = _changed_at(view, first)
    return RULE.finding(
        severity=WARNING if first.use == USE_BACKEND else ERROR,
        # the change replays first ran under: a value that goes back and forth (a counter
        # picking one of two buffers) ends where it was captured, which says nothing
        title=f"graph {graph.id} {_what(first, first.value)} ({changed})",
        explanation=(f"During the capture of graph {graph.id}, {_read(view, first)}. "
                     f"{_since(view, first, latest)} {counted(after, 'replay')} ran after "
                     f"that change: {_consequence(first)} {RECORDED}"),
        fix=_fix(first), evidence=tuple(view.evidence(KIND, i, f"{r.seen}: {r.value}")
                                        for i, r in later),
        location=view.location(first.site), graph=graph.id,
        measurements={"use": first.use, "name": first.name, "owner": first.owner,
                      "captured": first.captured, "values": [r.value for _, r in later],
                      "latest": latest.value, "replays_after": after, "seen": first.seen,
                      **_changed_where(view, first)})


def _what(row: FrozenValue, latest: str) -> str:
    """The title's words: what the graph replays, and what the script made of it."""
    name, was = row.name, row.captured
    if row.use == USE_MODE:
        return f"replays {name} in {was} mode; the script switched it to {latest}"
    if row.use == USE_INDEX:
        container, key = _indexed(name)
        return (f"replays {container}[{key}] with {key} = {was} frozen; the script has since "
                f"set it to {latest}")
    if row.use == USE_BRANCH:
        return (f"replays the branch taken with {name} = {was}; the script has since made "
                f"it {latest}")
    if row.use == USE_GRAD:
        return f"replays {name} as captured ({was}); now {latest}"
    if row.use == USE_HOOKS:
        return f"replays {name} with the hooks it had when captured; now {latest}"
    if row.use == USE_WEIGHTS:
        return f"reads {name}'s weights where they were when captured; now {latest}"
    return f"keeps the kernels chosen with {name} = {was}; the script has since set {latest}"


def _read(view: TraceView, row: FrozenValue) -> str:
    where = view.where(row.site)
    if row.use == USE_MODE:
        return (f"{row.name} ran in {row.captured} mode at {where}, and its modules that read "
                f"it ({row.owner}) recorded the kernels of that mode")
    if row.use == USE_INDEX:
        container, key = _indexed(row.name)
        return f"{key} was {row.captured} at {where}, so the graph reads and writes " \
               f"{container}[{row.captured}]"
    if row.use == USE_BRANCH:
        return f"{row.name} was {row.captured} at {where}, and only that branch was recorded"
    if row.use in (USE_GRAD, USE_HOOKS, USE_WEIGHTS):
        return f"{row.name} ({row.owner}), called at {where}, ran with {row.captured}"
    return f"{row.name} was {row.captured} when the capture began at {where}"


def _since(view: TraceView, first: FrozenValue, latest: FrozenValue) -> str:
    how = f"at {view.where(first.stack)}" if view.culprit_frame(first.stack) is not None \
        else f"before replay {first.replays + 1}"
    then = f", then {latest.value}" if latest.value not in (first.value, first.captured) \
        else ""
    return f"The script changed it to {first.value} {how}{then}."


def _consequence(row: FrozenValue) -> str:
    if row.use == USE_MODE:
        return (f"each still ran in {row.captured} mode (dropout as captured, batch norm's "
                f"statistics as captured).")
    if row.use == USE_INDEX:
        _, key = _indexed(row.name)
        return f"each still used the tensor {key} = {row.captured} picked."
    if row.use == USE_BRANCH:
        return "each still ran the branch the capture took."
    if row.use == USE_GRAD:
        return "each still computed the gradients the capture did."
    if row.use == USE_HOOKS:
        return ("a hook added after the capture never runs in a replay, and one removed "
                "still does.")
    if row.use == USE_WEIGHTS:
        return "each still read the memory the weights had, not the new weights."
    return "each still ran the kernels chosen under the old setting."


def _fix(row: FrozenValue) -> str:
    name = row.name
    if row.use == USE_MODE:
        return (f"Put {name} in the mode the replays need before capturing ({name}.eval() "
                f"before capturing an inference graph), or capture one graph per mode and "
                f"replay the one that matches (graphs[{name}.training].replay()); capture "
                f"again after switching modes.")
    if row.use == USE_INDEX:
        container, key = _indexed(name)
        return (f"Capture one graph per value of {key} and replay the one that matches "
                f"(graphs[{key}].replay()), or have the graph write one fixed buffer and pick "
                f"the destination outside it ({container}[{key}].copy_(static_out) after "
                f"replay()).")
    if row.use == USE_BRANCH:
        return (f"Capture one graph per value of {name} and replay the one that matches, or "
                f"make the choice on the GPU (torch.where with a device tensor the script "
                f"fills before each replay); or capture again after changing {name}.")
    if row.use == USE_GRAD:
        return ("Set requires_grad before capturing, and capture again after freezing or "
                "unfreezing parameters.")
    if row.use == USE_HOOKS:
        return ("Register hooks before the capture (a hook runs in replays only if the "
                "capture ran it), or capture again after adding or removing one; to read an "
                "activation at every replay, copy it into a buffer in the captured code.")
    if row.use == USE_WEIGHTS:
        return ("Update weights in place (with torch.no_grad(): p.copy_(new), or "
                "load_state_dict(state) without assign=True), so replays read them where "
                "the capture found them; or capture again after moving them.")
    return f"Set {name} before capturing, or capture again after changing it."


def _indexed(name: str) -> tuple[str, str]:
    """``("self.outs", "self.slot")`` for ``self.outs[self.slot]``."""
    container, _, key = name.partition("[")
    return container, key[:-1] if key.endswith("]") else key


def _changed_at(view: TraceView, row: FrozenValue) -> str:
    if view.culprit_frame(row.stack) is not None:
        return view.where(row.stack)
    return f"seen before replay {row.replays + 1}"


def _changed_where(view: TraceView, row: FrozenValue) -> dict[str, object]:
    frame = view.culprit_frame(row.stack)
    return {"changed_file": frame.file, "changed_line": frame.line} if frame else {}


RULE = Rule(ID, NAME, check, __doc__ or "", severity=WARNING, category=UNSAFE)
