"""Under reduce-overhead, every new input shape records a new CUDA graph.

CUDAGraph Trees keep one graph per distinct set of sizes. With changing shapes (sequence
lengths, batch sizes) each new shape recompiles and records its own graph: recording is an
eager warmup plus a capture, far slower than a plain eager step, and each graph keeps its
own memory. If shapes rarely repeat, the run spends its time recording, not replaying.
(Graphs recorded because something else recompiled the function, a re-allocated buffer or
a Python value, are the recompiles rule's to explain, and those recorded because a static
input moved the static-input-moved rule's: padding inputs would not help them.)

How to fix: pad or bucket inputs to a few fixed sizes, mark the dimension dynamic
(``torch._dynamo.mark_dynamic``) and choose sizes with
``torch._inductor.config.triton.cudagraph_capture_sizes``, or skip graphs for dynamic shapes
(``cudagraph_skip_dynamic_graphs=True``).
"""

from __future__ import annotations

from collections.abc import Iterator

from graphdoctor.diagnose import compile_costs
from graphdoctor.diagnose.findings import NEUTRAL, WARNING, Finding, Rule
from graphdoctor.diagnose.view import TraceView
from graphdoctor.trace.model import Function
from graphdoctor.trace.names import CUDAGRAPH_RECORD, INPUT_SHAPE, RECOMPILE, RERECORD
from graphdoctor.trace.rerecords import moved_inputs

ID, NAME = "GD205", "rerecord-per-shape"
LIMIT = 3


def check(view: TraceView) -> Iterator[Finding]:
    for fn in view.compiled_functions:
        graphs = view.graphs_of(fn.id)
        if len(graphs) < LIMIT or _other_causes(view, fn):
            continue
        records = [(i, e) for i, e in view.compile_events(CUDAGRAPH_RECORD)
                   if view.function_at(e.t) == fn.id]
        frame = compile_costs.frame_of(fn.compile_id)
        recompiles = [(i, e) for i, e in view.compile_events(RECOMPILE)
                      if compile_costs.frame_of(e.compile_id) == frame]
        keys = [e.key or "no dynamic sizes" for _, e in records]
        replays = sum(1 for r in view.trace.tables["replays"]
                      if r.graph in {g.id for g in graphs})
        stack = recompiles[0][1].stack if recompiles else graphs[0].stack
        inputs = _inputs_seen(view, fn)
        yield Finding(
            ID, NAME, WARNING, NEUTRAL,
            title=f"{fn.name} recorded {len(graphs)} CUDA graphs, one per input shape, for "
                  f"{replays} replays",
            explanation=(f"Each new shape recompiled {fn.name} and recorded a graph"
                         + (f" (keys: {', '.join(keys[:8])})" if keys else "") + "; "
                         + (f"the guard that failed: {recompiles[0][1].reason}. " if recompiles
                            else "") + inputs
                         + f"{len(graphs)} recordings served {replays} replays."),
            fix="Pad or bucket inputs to a few sizes, or use mark_dynamic with "
                "cudagraph_capture_sizes.",
            evidence=tuple(view.evidence("compile_events", i) for i, _ in records + recompiles)
            + tuple(view.evidence("graphs", view.trace.graphs.index(g)) for g in graphs),
            location=view.location(stack), function=fn.id,
            measurements={"graphs": len(graphs), "replays": replays, "keys": keys})


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


RULE = Rule(ID, NAME, check, __doc__ or "")
