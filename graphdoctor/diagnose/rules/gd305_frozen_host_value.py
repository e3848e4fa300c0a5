"""A graph replays a Python number that the script changed after the capture.

A kernel takes a Python number (a learning rate, an Adam beta, a decode position, a scale)
by value when it is launched: the capture freezes the number into the graph, and every
replay runs with the one the capture saw. Changing it afterwards (an LR scheduler's
``step()``, ``pos += 1``, ``self.scale = s``) changes nothing a replay reads, and nothing
raises: the optimizer keeps its first learning rate, a decoder keeps writing one position.
graphdoctor names the number, the value the graph froze, the values the script gave it
later (or that eager calls of the same function passed before the capture) and the line
that changed it. One graph per value (one per batch size, say) is the right pattern and
gets no finding.

How to fix: keep the number in a device tensor and update it in place before each replay
(``pos_t.fill_(pos)``, ``scale_t.fill_(scale)``), reading the tensor in the captured code;
for a learning rate, where torch accepts it, pass ``lr=torch.tensor(1e-3, device="cuda")``
with ``capturable=True`` and LR schedulers update it in place; or capture again after each
change.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from graphdoctor.diagnose import frozen_rows
from graphdoctor.diagnose.findings import ERROR, UNSAFE, Evidence, Finding, Location, Rule
from graphdoctor.diagnose.frozen_rows import KIND, Row
from graphdoctor.diagnose.view import TraceView, times
from graphdoctor.facts import queries
from graphdoctor.trace.event_kinds import FROZEN_CHANGES_KEPT, FrozenValue
from graphdoctor.trace.model import Graph
from graphdoctor.trace.names import (
    HELD_BY_ARGUMENT,
    HELD_BY_ATTRIBUTE,
    HELD_BY_OPTIMIZER,
    SAMPLE_EVERY_NS,
    SEEN_EAGER,
    SEEN_SCHEDULER,
    USE_BY_VALUE,
)
from graphdoctor.units import counted, format_duration

ID, NAME = "GD305", "frozen-host-value"
# measurements a patch reads (graphdoctor.fix.patchers.frozen_lr): the number as captured,
# which one it is and what holds it, and the script's line that changed it
CAPTURED_VALUE, VALUE_NAME, HELD_BY, OWNER = "captured", "name", "held_by", "owner"
CHANGED_FILE, CHANGED_LINE = "changed_file", "changed_line"
NUMBERS = (USE_BY_VALUE,)  # the other host state a graph froze is GD306's
SHOWN = 3  # values named one by one before the last
FIGURES = 4  # significant figures of a float in the text (the measurements keep all)
CHECKED_AT = (f"the 1st, 2nd, 4th, 8th… and one every "
              f"{format_duration(SAMPLE_EVERY_NS)}")
BY_VALUE = ("a kernel takes a Python number by value, so a replay runs with the number the "
            "capture saw, whatever the script holds now.")


def check(view: TraceView) -> Iterator[Finding]:
    for graph_id, values in frozen_rows.by_graph(view, NUMBERS).items():
        graph = view.graph(graph_id)
        if graph is not None and values:
            yield from _graph_findings(view, graph, values)


def _graph_findings(view: TraceView, graph: Graph, values: list[list[Row]]) -> Iterator[Finding]:
    """A finding per value changed after the capture while replays went on; one told only
    by eager calls is told inside such a finding where it is the same number (``pos`` of
    ``decode_step`` is the loop's ``pos``, passed on), else on its own where no other graph
    holds the values."""
    replays = queries.replay_count(view.trace, graph)
    changed = [rows for rows in values if frozen_rows.stale(rows, replays)]
    untold = [rows for rows in values if rows not in changed]
    for rows in changed:
        same = [other for other in untold if _same_number(rows[0][1], other[0][1])]
        untold = [other for other in untold if other not in same]
        eager = [row for other in [rows, *same] for row in _eager(other)]
        yield _changed(view, graph, frozen_rows.later(rows), replays,
                      _uncovered(view, graph, eager))
    for rows in untold:
        eager = _uncovered(view, graph, _eager(rows))
        if eager and replays > 0:
            yield _passed_eagerly(view, graph, eager, replays)


def _same_number(changed: FrozenValue, eager: FrozenValue) -> bool:
    """Whether an argument eager calls were given is the number changed later under the
    caller's name: the same name (``self.pos`` and ``pos`` too) and the same frozen value."""
    return (changed.captured == eager.captured
            and changed.name.rsplit(".", 1)[-1] == eager.name.rsplit(".", 1)[-1])


def _eager(rows: list[Row]) -> list[Row]:
    return [(i, r) for i, r in rows if r.seen == SEEN_EAGER]


# -- changed after the capture ---------------------------------------------------------------
def _changed(view: TraceView, graph: Graph, later: list[Row], replays: int,
             eager: list[Row]) -> Finding:
    """``later``: the value's changes in time order; ``eager``: values eager calls passed
    before the capture, told alongside."""
    first = frozen_rows.first_stale(later, replays)
    row, values = later[-1][1], [r.value for _, r in later]
    changes = max(r.changes for _, r in later)
    captured, after = _short(row.captured), replays - first.replays
    return RULE.finding(
        title=f"graph {graph.id} replays {_named(row)} frozen at {captured}; "
              f"{_changed_how(first, changes, row.value)} ({_changed_at(view, first)})",
        explanation=(f"Graph {graph.id} took {_named(row)} as {captured} at "
                     f"{view.where(first.site)}. {_later_values(first, values, changes)}, "
                     f"{_changed_by(view, first)}. {counted(after, 'replay')} ran after that "
                     f"change, each with {captured}: {BY_VALUE}{_told(eager)}"),
        fix=_fix(row, any(r.tensor_fix for _, r in later), eager=False),
        evidence=_evidence(view, later + eager), location=_site(view, first), graph=graph.id,
        measurements={CAPTURED_VALUE: row.captured, "values": values, "latest": row.value,
                      "changes_seen": changes, "replays_after": after, "seen": first.seen,
                      "eager_values": _distinct(eager), **_held(row),
                      **_changed_where(view, first)})


def _changed_how(first: FrozenValue, changes: int, latest: str) -> str:
    """The title's account of the changes: each one, where a scheduler step told it; what
    the checks saw, where the value was read at sampled replays or at the end."""
    if first.seen != SEEN_SCHEDULER:
        return f"the script has since changed it, to {_short(latest)} when last checked"
    return f"the script changed it {_how_often(changes)} {_short(latest)}"


def _later_values(first: FrozenValue, values: list[str], changes: int) -> str:
    if first.seen != SEEN_SCHEDULER:
        return (f"Checked at sampled replays ({CHECKED_AT}), the script held "
                f"{_listed(values)} ({_changes(changes)} seen)")
    return f"The script then set it to {_listed(values)} ({_changes(changes)})"


def _told(eager: list[Row]) -> str:
    if not eager:
        return ""
    row = eager[0][1]
    return (f" Before the capture, eager calls of {row.owner or 'the function'} passed "
            f"{row.name} as {_listed(_distinct(eager))}.")


def _distinct(rows: list[Row]) -> list[str]:
    return list(dict.fromkeys(r.value for _, r in rows))


def _how_often(changes: int) -> str:
    if changes == 1:
        return "to"
    if changes >= FROZEN_CHANGES_KEPT:
        return f"{times(changes)} or more, last recorded"
    return f"{times(changes)}, last to"


def _changes(changes: int) -> str:
    if changes >= FROZEN_CHANGES_KEPT:
        return (f"{counted(changes, 'change')} or more: only the first "
                f"{FROZEN_CHANGES_KEPT} are recorded")
    return counted(changes, "change")


def _changed_at(view: TraceView, row: FrozenValue) -> str:
    """Where a change was made, for a title: its line, or the replay it was seen before."""
    if view.culprit_frame(row.stack) is not None:
        return view.where(row.stack)
    return f"seen before replay {row.replays + 1}"


def _changed_by(view: TraceView, row: FrozenValue) -> str:
    """The first change, in words: the scheduler.step() call, the assignment the source
    holds for it, or the replay before which it was seen."""
    if view.culprit_frame(row.stack) is None:
        return f"first seen changed before replay {row.replays + 1}"
    if row.seen == SEEN_SCHEDULER:
        return f"first by the scheduler.step() call at {view.where(row.stack)}"
    return f"first at {view.where(row.stack)}, the assignment to it found in the source"


# -- passed eagerly before the capture --------------------------------------------------------
def _uncovered(view: TraceView, graph: Graph, eager: list[Row]) -> list[Row]:
    """The eager values no other graph can hold. Another graph that took the same name at
    the same line holds its captured value; one captured at the same line as this graph
    but with no row of its own there (every value it saw was its own) holds one we cannot
    name, so that many unnamed values are taken to be held too."""
    if not eager:
        return []
    first = eager[0][1]
    others = [r for _, r in frozen_rows.rows(view, NUMBERS) if r.graph != graph.id
              and r.name == first.name
              and _site_key(view, r.site) == _site_key(view, first.site)]
    held = {r.captured for r in others}
    left = [(i, r) for i, r in eager if r.value not in held and frozen_rows.is_value(r.value)]
    unnamed = [g for g in _captured_alike(view, graph) if g.id not in {r.graph for r in others}]
    return left if len({r.value for _, r in left}) > len(unnamed) else []


def _site_key(view: TraceView, stack: int) -> Location | int:
    """A line of the user's code, so that two stacks through one line compare equal."""
    return view.location(stack) or stack


def _captured_alike(view: TraceView, graph: Graph) -> list[Graph]:
    """The user's other graphs captured at the same line as ``graph``."""
    line = view.location(graph.stack)
    if line is None:
        return []
    return [g for g in view.graphs if g.id != graph.id and view.location(g.stack) == line]


def _passed_eagerly(view: TraceView, graph: Graph, eager: list[Row], replays: int) -> Finding:
    row = eager[0][1]  # where the graph first took it
    values = _distinct(eager)
    captured = _short(row.captured)
    return RULE.finding(
        title=f"graph {graph.id} replays {_named(row)} frozen at {captured}; eager calls "
              f"passed {_listed(values)} ({view.where(row.site)})",
        explanation=(f"Eager calls of {row.owner or 'the function'} passed {row.name} as "
                     f"{_listed(values)}; the graph froze {captured} at "
                     f"{view.where(row.site)}, and no other graph took {row.name} there with "
                     f"those values. Its {counted(replays, 'replay')} all ran with "
                     f"{captured}: {BY_VALUE}"),
        fix=_fix(row, any(r.tensor_fix for _, r in eager), eager=True),
        evidence=_evidence(view, eager), location=_site(view, row), graph=graph.id,
        measurements={CAPTURED_VALUE: row.captured, "values": values, "latest": values[-1],
                      "changes_seen": len(values), "replays_after": replays,
                      "seen": SEEN_EAGER, "eager_values": values, **_held(row)})


# -- what every finding says ------------------------------------------------------------------
def _changed_where(view: TraceView, row: FrozenValue) -> dict[str, object]:
    """The script's line that changed the value (a patch edits it), where known."""
    frame = view.culprit_frame(row.stack)
    return {CHANGED_FILE: frame.file, CHANGED_LINE: frame.line} if frame else {}


def _held(row: FrozenValue) -> dict[str, str]:
    """Which number it is, as the fix names it: ``lr``, held by ``AdamW`` (an optimizer)."""
    return {VALUE_NAME: row.name, HELD_BY: row.held_by, OWNER: row.owner}


def _named(row: FrozenValue) -> str:
    """The number as the user knows it: AdamW's param_groups[0]['lr'], Attention's
    self.scale, argument pos of decode_step, pos in decode.py."""
    if not row.owner:
        return row.name
    if row.held_by in (HELD_BY_OPTIMIZER, HELD_BY_ATTRIBUTE):
        return f"{row.owner}'s {row.name}"
    if row.held_by == HELD_BY_ARGUMENT:
        return f"argument {row.name} of {row.owner}"
    return f"{row.name} in {row.owner}"


def _listed(values: Sequence[str]) -> str:
    """``0, 1, 2`` or, past a few, the first few and the last: ``9, 8, 7, …, 0``."""
    shown = [_short(value) for value in values]
    if len(shown) <= SHOWN + 1:
        return ", ".join(shown)
    return ", ".join([*shown[:SHOWN], "…", shown[-1]])


def _short(shown: str) -> str:
    """A float to a few figures, as Python writes it (``0.0004972``, ``4.344e-05``,
    ``0.0``); anything else as recorded."""
    if _is_integer(shown):
        return shown
    try:
        return repr(float(f"{float(shown):.{FIGURES}g}"))
    except ValueError:
        return shown


def _site(view: TraceView, row: FrozenValue) -> Location | None:
    return view.location(row.site)


def _evidence(view: TraceView, rows: list[Row]) -> tuple[Evidence, ...]:
    return tuple(view.evidence(KIND, i, f"{r.seen}: {r.value}") for i, r in rows)


# -- the fix -----------------------------------------------------------------------------------
def _fix(row: FrozenValue, tensor_fix: bool, eager: bool) -> str:
    if row.held_by == HELD_BY_OPTIMIZER:
        return _optimizer_fix(row, tensor_fix)
    fix = _integer_fix(row) if _is_integer(row.captured) else _float_fix(row)
    return fix + (" Or capture one graph per value and replay the one that matches."
                  if eager else " Or capture the graph again after each change.")


def _optimizer_fix(row: FrozenValue, tensor_fix: bool) -> str:
    optimizer = row.owner or "the optimizer"
    if tensor_fix:
        return (f"Pass the learning rate as a device tensor with capturable=True, e.g. "
                f"{optimizer}(params, lr=torch.tensor({_short(row.captured)}, device=\"cuda\"), "
                "capturable=True): LR schedulers then update it in place and replays read the "
                "current value. Or capture the step again after each change.")
    return (f"Capture the optimizer step again after each change of {row.name} (or keep it "
            f"constant while the graph is used): this torch gives {optimizer}'s step "
            f"{row.name} as a Python number.")


def _integer_fix(row: FrozenValue) -> str:
    tensor = _tensor_name(row.name)
    return (f"Keep {row.name} in a device tensor, {tensor} = torch.zeros((), dtype=torch.long, "
            f"device=\"cuda\"), index with it in the captured code (k_cache.index_copy_(1, "
            f"{tensor}.view(1), k), or torch.index_select) and write it in place before each "
            f"replay: {tensor}.fill_({row.name}) or {tensor}.copy_(...).")


def _float_fix(row: FrozenValue) -> str:
    tensor = _tensor_name(row.name)
    return (f"Keep {row.name} in a device tensor, {tensor} = torch.tensor({_short(row.captured)}, "
            f"device=\"cuda\"), multiply by {tensor} in the captured code, and update it in "
            f"place before each replay: {tensor}.fill_(new_value).")


def _tensor_name(name: str) -> str:
    """``pos_t`` for ``pos`` or ``self.pos``: the tensor's name in a fix."""
    base = name.rsplit(".", 1)[-1]
    return f"{base if base.isidentifier() else 'value'}_t"


def _is_integer(shown: str) -> bool:
    try:
        int(shown)
    except ValueError:
        return False
    return True


RULE = Rule(ID, NAME, check, __doc__ or "", severity=ERROR, category=UNSAFE)
