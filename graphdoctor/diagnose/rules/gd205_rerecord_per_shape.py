"""Under reduce-overhead, every new input shape records a new CUDA graph.

CUDA graph trees keep one graph per distinct set of sizes. How a function comes to have
many is told apart, because the fix differs. After its first recompile for a new size,
torch.compile usually makes that dimension dynamic (automatic dynamic shapes): no more
recompiles, but the trees still record one graph per distinct size of the dynamic-shape
graph, each recording an eager warmup and a capture, far slower than a step, and each graph
keeps its own memory in the pool. Without dynamic shapes each new size recompiles too. The
finding counts the sizes seen, the recordings, the recompiles, the time the recordings took
and the pool memory they hold. (Graphs recorded because something else recompiled the
function, a re-allocated buffer or a Python value, are the recompiles rule's to explain, and
those recorded because a static input moved the static-input-moved rule's: padding inputs
would not help them.)

How to fix: pad or bucket inputs to a few fixed sizes; or skip CUDA graphs for dynamic-shape
graphs (``torch._inductor.config.triton.cudagraph_skip_dynamic_graphs = True``), or record
only chosen sizes (``torch._inductor.config.triton.cudagraph_capture_sizes``); torch warns
once a function passes ``triton.cudagraph_dynamic_shape_warn_limit`` distinct sizes. Where
each size recompiles (no dynamic shapes), ``torch._dynamo.mark_dynamic`` saves the compiles.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from graphdoctor.diagnose import compile_costs
from graphdoctor.diagnose.findings import NEUTRAL, WARNING, Finding, Rule
from graphdoctor.diagnose.view import TraceView, mib, times
from graphdoctor.trace.model import Function, Graph
from graphdoctor.trace.names import (
    CUDAGRAPH_RECORD,
    INPUT_SHAPE,
    RECOMPILE,
    REPLAYING_CALL,
    RERECORD,
)
from graphdoctor.trace.torch_logs.rerecords import moved_inputs

ID, NAME = "GD205", "rerecord-per-shape"
LIMIT = 3
SIZES_SHOWN = 12
PAD = "Pad or bucket inputs to a few sizes (powers of two, say), so a few graphs serve them all"
SKIP_DYNAMIC = ("or run dynamic-shape graphs without CUDA graphs "
                "(torch._inductor.config.triton.cudagraph_skip_dynamic_graphs = True), or "
                "record only chosen sizes (torch._inductor.config.triton."
                "cudagraph_capture_sizes); torch warns past triton."
                "cudagraph_dynamic_shape_warn_limit distinct sizes")


@dataclass(frozen=True)
class Recordings:
    """How a compiled function's graphs came to be."""

    graphs: list[Graph]
    sizes: list[str]  # the distinct sizes its dynamic-shape graphs were recorded for
    per_size: int  # graphs recorded for a size of a dynamic-shape graph
    recompiles: int
    recording_ns: int
    pool_bytes: int
    replaying_calls: int

    @property
    def per_compile(self) -> int:
        return len(self.graphs) - self.per_size


def check(view: TraceView) -> Iterator[Finding]:
    for fn in view.compiled_functions:
        graphs = view.graphs_of(fn.id)
        if len(graphs) < LIMIT or _other_causes(view, fn):
            continue
        yield _finding(view, fn, _recordings(view, fn, graphs))


def _recordings(view: TraceView, fn: Function, graphs: list[Graph]) -> Recordings:
    frame = compile_costs.frame_of(fn.compile_id)
    dynamic = [sizes for compile_id, sizes in compile_costs.sizes_recorded(view.trace).items()
               if compile_costs.frame_of(compile_id) == frame]
    recompiles = [e for _, e in view.compile_events(RECOMPILE)
                  if compile_costs.frame_of(e.compile_id) == frame]
    calls = sum(1 for c in view.trace.tables["calls"]
                if c.fn == fn.id and c.mode == REPLAYING_CALL)
    return Recordings(graphs, list(dict.fromkeys(s for sizes in dynamic for s in sizes)),
                      min(len(graphs), sum(len(sizes) for sizes in dynamic)), len(recompiles),
                      compile_costs.recording_ns(view.trace, frame), _pool_bytes(graphs), calls)


def _pool_bytes(graphs: list[Graph]) -> int:
    """The memory the graphs' pools hold: a shared pool once, its largest reading."""
    by_pool: dict[str, int] = {}
    for g in graphs:
        key = g.pool or f"graph {g.id}"
        by_pool[key] = max(by_pool.get(key, 0), g.pool_bytes)
    return sum(by_pool.values())


def _title(fn: Function, r: Recordings) -> str:
    if not r.per_size:
        return (f"{fn.name} recorded {len(r.graphs)} CUDA graphs, one per input shape, each "
                f"after a recompile ({times(r.recompiles)}), for {r.replaying_calls} "
                "replaying calls")
    return (f"{fn.name} recorded {len(r.graphs)} CUDA graphs for {r.replaying_calls} "
            f"replaying calls: {_for_sizes(r)} of its dynamic-shape graph, {r.per_compile} from "
            + ("its first compile" if r.per_compile == 1 else "compiles of fixed sizes") + " ("
            + (f"recompiled {times(r.recompiles)})" if r.recompiles else "no recompile)"))


def _for_sizes(r: Recordings) -> str:
    """``62 for 62 sizes``, or where a size was recorded again, ``63 for 62 sizes``."""
    return f"{r.per_size} for {len(r.sizes)} size{'s' if len(r.sizes) != 1 else ''}"


def _cost(view: TraceView, r: Recordings) -> str:
    parts = []
    if r.recording_ns:
        share = compile_costs.share(view.trace, r.recording_ns)
        parts.append(f"Recording them took {r.recording_ns / 1e6:,.1f} ms"
                     + (f" ({share:.0%} of the run)" if share is not None else ""))
    if r.pool_bytes:
        parts.append(f"their memory pool holds {mib(r.pool_bytes)}")
    return ("; ".join(parts) + ". ") if parts else ""


def _explanation(view: TraceView, fn: Function, r: Recordings) -> str:
    shown = ", ".join(r.sizes[:SIZES_SHOWN]) + (", ..." if len(r.sizes) > SIZES_SHOWN else "")
    how = (f"CUDA graph trees record one graph per distinct size of a dynamic-shape graph: "
           f"{fn.name} was recorded for {len(r.sizes)} sizes ({shown}) without a recompile "
           "for each. " if r.per_size else
           f"Each new shape recompiled {fn.name} and recorded a graph. ")
    return how + _cost(view, r) + _inputs_seen(view, fn)


def _fix(r: Recordings) -> str:
    if r.per_size:
        return f"{PAD}; {SKIP_DYNAMIC}."
    return (f"{PAD}, or mark the dimension dynamic (torch._dynamo.mark_dynamic) so one "
            "compile serves every size.")


def _finding(view: TraceView, fn: Function, r: Recordings) -> Finding:
    records = [(i, e) for i, e in view.compile_events(CUDAGRAPH_RECORD)
               if view.function_at(e.t) == fn.id]
    recompiles = [(i, e) for i, e in view.compile_events(RECOMPILE)
                  if compile_costs.frame_of(e.compile_id) == compile_costs.frame_of(
                      fn.compile_id)]
    stack = recompiles[0][1].stack if recompiles else r.graphs[0].stack
    return RULE.finding(
        title=_title(fn, r),
        explanation=_explanation(view, fn, r), fix=_fix(r),
        evidence=tuple(view.evidence("compile_events", i) for i, _ in records + recompiles)
        + tuple(view.evidence("graphs", view.trace.graphs.index(g)) for g in r.graphs),
        location=view.location(stack), function=fn.id,
        measurements={"graphs": len(r.graphs), "replaying_calls": r.replaying_calls,
                      "sizes": len(r.sizes), "per_size": r.per_size,
                      "recompiles": r.recompiles, "recording_ns": r.recording_ns,
                      "pool_bytes": r.pool_bytes, "keys": r.sizes[:SIZES_SHOWN]})


def _inputs_seen(view: TraceView, fn: Function) -> str:
    """The inputs whose shapes the recompiles' guards named, with their position and each
    shape torch.compile found them in: ``x (argument 1) came as 8, then 16. ``."""
    frame = compile_costs.frame_of(fn.compile_id)
    shapes: dict[str, list[str]] = {}
    tensors = [r.tensor for f in compile_costs.compiled_frames(view.trace) if f.frame == frame
               for r in f.recompiles]
    for tensor in (t for t in tensors if t is not None):
        position = f" (argument {tensor.position})" if tensor.position >= 0 else ""
        shapes.setdefault(tensor.name + position, []).append(tensor.shape)
    return "".join(f"{name} came as {', then '.join(seen)}. " for name, seen in shapes.items())


def _other_causes(view: TraceView, fn: Function) -> bool:
    """Whether the function recompiled for something else than an input's shape (a
    re-allocated buffer, a value), or recorded again because a static input moved: then the
    recompiles or the static-input-moved rule explains its graphs, and padding inputs would
    not help."""
    frame = compile_costs.frame_of(fn.compile_id)
    moved = any(view.function_at(e.t) == fn.id and moved_inputs(e.detail)
                for _, e in view.compile_events(RERECORD))
    return moved or any(r.cause != INPUT_SHAPE for f in compile_costs.compiled_frames(view.trace)
                        if f.frame == frame for r in f.recompiles)


RULE = Rule(ID, NAME, check, __doc__ or "", severity=WARNING, category=NEUTRAL)
