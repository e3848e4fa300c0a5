"""CUDA graph trees recorded a graph again because one of its static inputs moved.

A graph reads its static inputs (the module's parameters and buffers, and tensors marked
with ``torch._dynamo.mark_static_address``) where they were when it was recorded: they are
not copied in on each replay. When a call brings one at another address, the tree cannot
replay: it records the graph again (a warm-up, a capture, and more of the pool's memory),
with no recompile and nothing in the recompiles log. A parameter assigned anew
(``module.weight = nn.Parameter(...)``, ``load_state_dict(..., assign=True)``, weights
swapped in from another copy of the model) moves it, every time. graphdoctor names the
inputs as the compiled module calls them (its parameters' and buffers' names; else as the
graph does, ``arg1_1``), the addresses they came at and, where allocation stacks were kept,
the line that allocated the new tensors.

How to fix: keep each static input at one address: update it in place
(``with torch.no_grad(): param.copy_(new)``, or ``load_state_dict`` without ``assign``)
instead of assigning a new tensor; for a tensor marked static, mark the one you keep and
copy into it.
"""

from __future__ import annotations

from collections.abc import Iterator

from graphdoctor.diagnose import compile_costs
from graphdoctor.diagnose.findings import WARNING, WASTEFUL, Finding, Rule
from graphdoctor.diagnose.view import TraceView, times
from graphdoctor.trace.model import NONE, CompileEvent
from graphdoctor.trace.names import RERECORD
from graphdoctor.trace.torch_logs.rerecords import MovedInput, moved_inputs

ID, NAME = "GD209", "static-input-moved"
SHOWN = 4  # inputs and addresses named one by one
LATER = 1 << 62  # after any time of a run

Move = tuple[int, CompileEvent, tuple[MovedInput, ...]]  # (event's row, event, its moves)


def check(view: TraceView) -> Iterator[Finding]:
    by_function: dict[int, list[Move]] = {}
    events = view.compile_events(RERECORD)
    for k, (index, event) in enumerate(events):
        until = events[k + 1][1].t if k + 1 < len(events) else LATER
        moved = _moved(view, event, until)
        if moved:
            by_function.setdefault(view.function_at(event.t), []).append((index, event, moved))
    for fn, moves in by_function.items():
        yield _finding(view, fn, moves)


def _moved(view: TraceView, event: CompileEvent, until: int) -> tuple[MovedInput, ...]:
    """The inputs a re-recording moved: those its message names (which the trace may keep
    cut short), and those the recorder read from the whole message (a tensor row without a
    shape, just after it), with their new addresses."""
    named = moved_inputs(event.detail)
    known = {m.name for m in named}
    recorded = [MovedInput(t.source, 0, t.addr) for t in view.trace.guarded_tensors
                if not t.shape and event.t <= t.t < until and t.source not in known]
    return (*named, *recorded)


def _finding(view: TraceView, fn: int, moves: list[Move]) -> Finding:
    function = view.function(fn)
    tree_name = moves[0][1].function  # CUDA graph trees' name: partition_0, forward...
    name = function.name if function else "a compiled function" + (
        f" ({tree_name})" if tree_name else "")
    graphs = len(view.graphs_of(fn)) if function else 0
    rerecords = graphs - 1 if graphs > 1 else len(moves)
    named = {(t.source, t.addr): t.name for t in view.trace.guarded_tensors if not t.shape}
    inputs = list(dict.fromkeys(named.get((m.name, m.new), m.name)
                                for _, _, moved in moves for m in moved))
    placed = _allocation_sites(view, moves)
    return RULE.finding(
        title=f"{name} was recorded again {times(rerecords)}: {_inputs(inputs)} came at new "
              f"addresses",
        explanation=_explanation(view, name, moves, inputs, placed),
        fix=_fix(view.where(placed[0]) if placed else ""),
        evidence=tuple(view.evidence("compile_events", i) for i, _, _ in moves),
        location=view.location(placed[0] if placed else moves[0][1].stack), function=fn,
        measurements={"rerecords": rerecords, "graphs": graphs, "inputs": inputs,
                      "moves": sum(len(moved) for _, _, moved in moves),
                      "allocated_at": [view.where(stack) for stack in placed]})


def _allocation_sites(view: TraceView, moves: list[Move]) -> list[int]:
    """The stacks of the allocations that made the moved inputs' new tensors, one per user
    line, where allocation stacks were kept."""
    stacks: dict[str, int] = {}
    for _, _, moved in moves:
        for m in moved:
            stack = compile_costs.allocated_at(view.trace, m.new)
            if stack != NONE:
                stacks.setdefault(view.where(stack), stack)
    return list(stacks.values())


def _inputs(inputs: list[str]) -> str:
    if len(inputs) == 1:
        return f"its static input {inputs[0]}"
    more = f", … ({len(inputs)} in all)" if len(inputs) > SHOWN else ""
    return f"its static inputs {', '.join(inputs[:SHOWN])}{more}"


def _explanation(view: TraceView, name: str, moves: list[Move], inputs: list[str],
                 placed: list[int]) -> str:
    first = moves[0][2][0]
    used = (f"The graph first uses {first.name} at {view.where(moves[0][1].stack)}. "
            if first.frames else "")
    text = (f"CUDA graph trees replay a graph of {name} only while its static inputs "
            "(parameters, buffers, tensors marked static) stay at the addresses it was "
            f"recorded with; {len(inputs)} moved, {_as_graph_names(inputs[0], first.name)} "
            f"first from {first.old:#x} to {first.new:#x}. Each move recorded the graph again "
            f"(a warm-up and a capture, and more of the pool's memory), without a recompile. "
            f"{used}")
    if placed:
        text += "The new tensors were allocated at " + ", ".join(
            view.where(stack) for stack in placed) + "."
    else:
        text += ("Where the new tensors were allocated was not recorded: run with --full to "
                 "keep allocation stacks from the start.")
    return text


def _as_graph_names(shown: str, graph_name: str) -> str:
    return shown if shown == graph_name else f"{shown} ({graph_name} in the graph)"


def _fix(allocated_at: str) -> str:
    where = f" ({allocated_at} allocates new ones)" if allocated_at else ""
    return (f"Keep the static inputs at one address{where}: update them in place (with "
            "torch.no_grad(): param.copy_(new), or load_state_dict without assign=True) "
            "instead of assigning new tensors or nn.Parameters.")


RULE = Rule(ID, NAME, check, __doc__ or "", severity=WARNING, category=WASTEFUL)
