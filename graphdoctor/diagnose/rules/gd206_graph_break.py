"""A graph break splits a compiled function into pieces, each its own CUDA graph.

torch.compile stops tracing at code it cannot put in a graph (``.item()``, data-dependent
Python branches, unsupported calls) and runs that part in Python. Under reduce-overhead,
each piece then becomes a separate graph with eager Python between them: more launches,
more bookkeeping, and the CPU back in the loop at every break. Where the run replayed the
pieces, graphdoctor measures what the break costs each call: the time from the end of the
piece before it to the start of the piece after it (the Python between them, and any
sync, such as ``.item()``'s wait for the GPU; graphdoctor's own few microseconds around
each call too), against the time in the two graphs; and what compiling the piece after it
cost.

How to fix: remove the break (``fullgraph=True`` finds them); for ``.item()`` set
``torch._dynamo.config.capture_scalar_outputs = True`` or keep the value as a tensor;
replace data-dependent branches with ``torch.where`` or ``torch.cond``.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from graphdoctor.diagnose import compile_costs
from graphdoctor.diagnose.findings import INFO, NEUTRAL, WARNING, Finding, Rule
from graphdoctor.diagnose.view import TraceView, times
from graphdoctor.trace.model import CompileEvent, Function
from graphdoctor.trace.names import GRAPH_BREAK, REPLAYING_CALL, RESUME_FUNCTION

ID, NAME = "GD206", "graph-break"


@dataclass(frozen=True)
class BreakCost:
    """What one break cost, measured over the replayed calls around it."""

    resumed_in: str  # the function dynamo compiled for the code after the break
    calls: int  # replayed calls with the piece before it and the piece after it
    gap_ns: int  # median time between the two pieces, per call
    graphs_ns: int  # median time in the two pieces, per call
    compile_ns: int  # compiling the piece after the break

    @property
    def share(self) -> float:
        return self.gap_ns / max(self.gap_ns + self.graphs_ns, 1)


def check(view: TraceView) -> Iterator[Finding]:
    graphed = [fn for fn in view.compiled_functions if view.graphs_of(fn.id)]
    sites: dict[tuple[str, int] | tuple[str, str], list[tuple[int, CompileEvent]]] = {}
    for index, event in view.compile_events(GRAPH_BREAK):
        frame = view.culprit_frame(event.stack)
        key = (frame.file, frame.line) if frame else (event.reason, str(index))
        sites.setdefault(key, []).append((index, event))
    for breaks in sites.values():
        yield _finding(view, breaks, len(graphed))


def _finding(view: TraceView, breaks: list[tuple[int, CompileEvent]], graphs: int) -> Finding:
    index, event = breaks[0]
    cost = _cost(view, event)
    split = graphs > 1
    return RULE.finding(
        severity=WARNING if split else INFO,
        title=f"graph break at {view.where(event.stack)}: {event.reason[:100]}"
              + (f" ({times(len(breaks))})" if len(breaks) > 1 else "")
              + (f"; {cost.gap_ns / 1e3:,.1f} µs a call outside CUDA graphs" if cost and cost.calls
                 else ""),
        explanation=("torch.compile stopped the graph here and runs this code in Python. "
                     + (f"Under reduce-overhead the step became {graphs} separate "
                        "CUDA graphs with eager Python between them. " if split else "")
                     + _cost_text(cost)).strip(),
        fix="Remove the break: keep values as tensors instead of Python scalars, or set "
            "torch._dynamo.config.capture_scalar_outputs = True for .item().",
        evidence=tuple(view.evidence("compile_events", i) for i, _ in breaks),
        location=view.location(event.stack),
        measurements={"graphs": graphs, "breaks": len(breaks), **_cost_facts(cost)})


def _cost(view: TraceView, event: CompileEvent) -> BreakCost | None:
    """The break's cost, from the replayed calls of the function resumed after it."""
    frame = view.culprit_frame(event.stack)
    if frame is None:
        return None
    name = RESUME_FUNCTION.format(function=frame.func.rsplit(".", 1)[-1], line=frame.line)
    resumed = next((fn for fn in view.compiled_functions if fn.name.endswith(name)), None)
    if resumed is None:
        return None
    pairs = _around(view, resumed)
    compiled = [f for f in compile_costs.compiled_frames(view.trace)
                if f.function == resumed.id]
    compile_ns = compiled[0].compile_ns if compiled else 0
    if not pairs:
        return BreakCost(resumed.name, 0, 0, 0, compile_ns)
    return BreakCost(resumed.name, len(pairs), int(statistics.median(g for g, _ in pairs)),
                     int(statistics.median(d for _, d in pairs)), compile_ns)


def _around(view: TraceView, resumed: Function) -> list[tuple[int, int]]:
    """(gap, time in both graphs) for each replay of the resumed piece right after a
    replay of another compiled piece."""
    calls = sorted(view.trace.tables["calls"], key=lambda c: c.t)
    pairs = []
    for before, after in zip(calls, calls[1:]):
        if after.fn == resumed.id and before.fn != resumed.id \
                and after.mode == before.mode == REPLAYING_CALL:
            gap = after.t - (before.t + before.dur)
            if gap >= 0:
                pairs.append((gap, before.dur + after.dur))
    return pairs


def _cost_text(cost: BreakCost | None) -> str:
    if cost is None:
        return ""
    compiled = (f"Compiling the piece after it ({cost.resumed_in}) took "
                f"{cost.compile_ns / 1e9:.2f} s." if cost.compile_ns else "")
    if not cost.calls:
        return compiled
    return (f"Each call spent {cost.gap_ns / 1e3:,.1f} µs between the two graphs (median of "
            f"{cost.calls} replayed calls), against {cost.graphs_ns / 1e3:,.1f} µs in them: "
            f"{cost.share:.0%} of the time around the break ran outside CUDA graphs. "
            + compiled)


def _cost_facts(cost: BreakCost | None) -> dict[str, Any]:
    if cost is None:
        return {}
    facts: dict[str, Any] = {"resumed_in": cost.resumed_in,
                             "compile_s": round(cost.compile_ns / 1e9, 3)}
    if cost.calls:
        facts.update(calls=cost.calls, gap_us=round(cost.gap_ns / 1e3, 1),
                     graphs_us=round(cost.graphs_ns / 1e3, 1), outside_share=round(cost.share, 3))
    return facts


RULE = Rule(ID, NAME, check, __doc__ or "", severity=WARNING, category=NEUTRAL)
