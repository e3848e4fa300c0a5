"""torch.compile compiled a function again and again: each recompile is a full compile.

Dynamo guards each compiled graph on what it assumed of the call (tensor sizes, Python
values, which objects were passed); when a guard fails, it compiles the function again, and
under reduce-overhead records a new CUDA graph too. graphdoctor names the guard that failed,
the value under the name your code uses, what changed, your line, and the compile time each
recompile cost; a run that spent most of its time recompiling says so first.

How to fix: it depends on what changed. A tensor re-allocated at a new size under a module
buffer, an attribute or a global (a KV cache set up again for each longer request): allocate
it once, at the largest size the run needs, and write into it; padding the inputs changes
nothing. A new shape of an input tensor: mark the dimension dynamic
(``torch._dynamo.mark_dynamic``) or pad or bucket inputs to a few sizes; where the recompile
already made the dimension dynamic (its graph was then recorded per size), nothing is asked
of the recompile, and the recordings are the rerecord-per-shape rule's. A Python value the
graph was specialised on: pass it as a tensor, or let an int vary (``dynamic=True``).
Another object than the one compiled for: keep the same object, and copy new values into a
tensor (``copy_``); ``torch._dynamo.mark_static_address`` keeps its address for CUDA graphs.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from graphdoctor.diagnose import compile_costs
from graphdoctor.diagnose.compile_costs import CompiledFrame, Recompile
from graphdoctor.diagnose.findings import ERROR, INFO, NEUTRAL, WARNING, Finding, Rule
from graphdoctor.diagnose.view import TraceView, times
from graphdoctor.trace.model import NONE, GuardedTensor
from graphdoctor.trace.names import (
    INPUT_SHAPE,
    OTHER_OBJECT,
    REALLOCATED_TENSOR,
    SPECIALISED_VALUE,
)

ID, NAME = "GD208", "recompiles"
DOMINATED = 0.5  # recompiling took more than this share of the run: said first, as an error
NOTABLE = 0.1  # a single recompile taking this share of the run is a warning
SHOWN = 8  # recompiles listed one by one in the explanation
RECOMPILE_COUNT = "recompiles"  # the measurement of how many recompiles the finding counts


@dataclass(frozen=True)
class _Cause:
    """The recompiles of one function that one cause, on one value, made."""

    kind: str
    name: str
    recompiles: tuple[Recompile, ...]

    @property
    def ns(self) -> int:
        return sum(r.event.dur for r in self.recompiles)

    @property
    def first(self) -> Recompile:
        """The first recompile of its own (not one that followed a re-allocation)."""
        return next((r for r in self.recompiles if not r.follows), self.recompiles[0])


def check(view: TraceView) -> Iterator[Finding]:
    for frame in compile_costs.compiled_frames(view.trace):
        for cause in _causes(frame.recompiles):
            yield _finding(view, frame, cause)


def _causes(recompiles: tuple[Recompile, ...]) -> list[_Cause]:
    grouped: dict[tuple[str, str], list[Recompile]] = {}
    for r in recompiles:
        grouped.setdefault((r.cause, r.name), []).append(r)
    causes = [_Cause(kind, name, tuple(rs)) for (kind, name), rs in grouped.items()]
    return sorted(causes, key=lambda c: (-c.ns, -len(c.recompiles)))


def _finding(view: TraceView, frame: CompiledFrame, cause: _Cause) -> Finding:
    share = compile_costs.share(view.trace, cause.ns)
    dominated = share is not None and share > DOMINATED
    many = len(cause.recompiles) > 1 or (share or 0.0) >= NOTABLE
    count = len(cause.recompiles)
    return RULE.finding(
        severity=ERROR if dominated else WARNING if many else INFO,
        title=("most of the run was recompiling: " if dominated else "")
        + f"{frame.name} recompiled {times(count)} {_because(cause)} ({_cost(cause.ns, share)})",
        explanation=_explanation(view, frame, cause),
        fix=_fix(cause, _allocation_site(view, cause), _dynamic_after(view, cause)),
        evidence=tuple(view.evidence("compile_events", r.index, r.event.compile_id)
                       for r in cause.recompiles),
        location=view.location(_culprit_stack(cause)), function=frame.function,
        measurements=_measurements(view, frame, cause, share))


def _dynamic_after(view: TraceView, cause: _Cause) -> bool:
    """Whether the last of these recompiles compiled a graph with dynamic sizes: CUDA graph
    trees recorded it for sizes (``mark_dynamic`` would not add what it already has)."""
    return cause.recompiles[-1].event.compile_id in compile_costs.sizes_recorded(view.trace)


def _culprit_stack(cause: _Cause) -> int:
    """The line that re-allocated the tensor where its allocation was seen; else the line
    the recompile points at."""
    allocated = [r.allocated_at for r in cause.recompiles if r.allocated_at != NONE]
    return allocated[0] if allocated else cause.first.event.stack


def _because(cause: _Cause) -> str:
    failure = cause.first.failure
    if cause.kind == REALLOCATED_TENSOR:
        return f"because tensor {cause.name} was re-allocated at another size ({_sizes(cause)})"
    if cause.kind == INPUT_SHAPE:
        tensor = cause.first.tensor
        position = f", argument {tensor.position}" if tensor and tensor.position >= 0 else ""
        return f"for new shapes of input {cause.name}{position} ({_sizes(cause)})"
    if cause.kind == SPECIALISED_VALUE:
        return f"on the guard {failure.guard}: the graph was specialised on its value"
    if cause.kind == OTHER_OBJECT:
        return f"because {cause.name} was another object than the one it was compiled for"
    return f"on the guard {failure.guard[:120]}"


def _sizes(cause: _Cause) -> str:
    """``size mismatch at index 2: 16 → 32 → 48 → 80``, from each recompile's own change."""
    segments: list[list[str]] = []
    for failure in (r.failure for r in cause.recompiles if not r.follows):
        if not segments or segments[-1][-1] != failure.old:
            segments.append([failure.old])
        segments[-1].append(failure.new or "?")
    first = cause.first.failure
    where = f" at index {first.dim}" if first.dim >= 0 else ""
    return f"{first.what} mismatch{where}: " + ", ".join(" → ".join(s) for s in segments)


def _cost(ns: int, share: float | None) -> str:
    if ns <= 0:
        return "its compile time was not recorded"
    return f"{ns / 1e9:.2f} s of compiling" + (f", {share:.0%} of the run" if share else "")


def _explanation(view: TraceView, frame: CompiledFrame, cause: _Cause) -> str:
    total = compile_costs.share(view.trace, frame.compile_ns)
    failure = cause.first.failure
    lines = [f"torch.compile compiled {frame.name} {times(frame.compiles)} in this run "
             f"({_cost(frame.compile_ns, total)}). The guard that failed: "
             f"{failure.guard}" + (f", at the line `{failure.code}`" if failure.code else "")
             + ".", *_why(cause), *_seen(view, cause)]
    shown = "; ".join(_one(r) for r in cause.recompiles[:SHOWN])
    more = len(cause.recompiles) - SHOWN
    return " ".join([*lines, f"Each recompile: {shown}" + (f"; and {more} more." if more > 0
                                                            else ".")])


def _why(cause: _Cause) -> list[str]:
    """Why a re-allocation recompiles, and the recompiles that followed one."""
    if cause.kind != REALLOCATED_TENSOR:
        return []
    lines = ["A tensor kept in a module's buffers or attributes, or in a global, has a static "
             "shape under torch.compile: each new size compiles it again."]
    followers = [r for r in cause.recompiles if r.follows]
    if followers:
        lines.append(f"{len(followers)} of these followed a re-allocation: the graph compiled "
                     f"for the new {cause.name} was specialised on that call's Python values "
                     f"({followers[0].failure.guard}), and the next value compiled it again.")
    return lines


def _seen(view: TraceView, cause: _Cause) -> list[str]:
    """The tensor each recompile's guard named, as the recorder found it, with the line
    that allocated it where the allocation's stack was kept."""
    seen = [r for r in cause.recompiles if r.tensor is not None and not r.follows]
    if not seen:
        return []
    parts = [_tensor(view, r, r.tensor) for r in seen[:SHOWN] if r.tensor is not None]
    lines = [f"torch.compile found {cause.name} as " + "; then ".join(parts) + "."]
    unplaced = [r for r in seen if r.allocated_at == NONE]
    if unplaced and len(unplaced) < len(seen):
        lines.append(f"{times(len(unplaced)).capitalize()} its allocation came before "
                     "graphdoctor kept allocation stacks (it keeps them from the first "
                     "re-allocation on; --full keeps them from the start).")
    return lines


def _tensor(view: TraceView, r: Recompile, tensor: GuardedTensor) -> str:
    text = f"{tensor.shape} {tensor.dtype} at {tensor.addr:#x} ({r.event.compile_id})"
    if r.allocated_at != NONE:
        text += f", allocated at {_allocated(view, r.allocated_at)}"
    return text


def _allocated(view: TraceView, stack: int) -> str:
    frame = view.culprit_frame(stack)
    return f"{view.where_frame(frame)} in {frame.func}" if frame else view.where(stack)


def _allocation_site(view: TraceView, cause: _Cause) -> str:
    return next((_allocated(view, r.allocated_at) for r in cause.recompiles
                 if r.allocated_at != NONE), "")


def _one(r: Recompile) -> str:
    change = r.failure.change if not r.follows else f"{r.failure.guard} after {r.follows}"
    cost = f", {r.event.dur / 1e9:.2f} s" if r.event.dur > 0 else ""
    return f"{r.event.compile_id} ({change or r.failure.guard[:80]}{cost})"


def _fix(cause: _Cause, allocated_at: str, dynamic_after: bool = False) -> str:
    name, failure = cause.name, cause.first.failure
    if cause.kind == REALLOCATED_TENSOR:
        where = f" ({allocated_at} allocates it again for each size)" if allocated_at else ""
        return (f"Allocate {name} once, at the largest size the run needs{where}, and write "
                "into it (slices, index_copy_) instead of creating it again for each size; "
                "padding the inputs would change nothing.")
    if cause.kind == INPUT_SHAPE and dynamic_after:
        return (f"Nothing to change for the recompile itself: it made {name}'s size dynamic "
                "(automatic dynamic shapes), and no new size compiled it again. The graphs "
                "recorded per size are rerecord-per-shape's (GD205).")
    if cause.kind == INPUT_SHAPE:
        return (f"Mark the dimension dynamic before the first call "
                f"(torch._dynamo.mark_dynamic({name}, {max(failure.dim, 0)})), or pad or "
                f"bucket {name} to a few sizes.")
    if cause.kind == SPECIALISED_VALUE:
        return _value_fix(name, failure.old)
    if cause.kind == OTHER_OBJECT:
        return _object_fix(name, failure.old)
    return ("Keep what this guard checks (dtype, device, requires_grad, type) the same from "
            "call to call, or compile one function per variant.")


def _value_fix(name: str, value: str) -> str:
    if name.startswith("len(") and name.endswith(")"):
        return (f"Each length of {name[4:-1]} compiles its own graph (this one was compiled "
                f"for {value}): call with the same arguments, keyword arguments included, "
                "every time, or compile the calls that differ separately.")
    if value.lstrip("-").isdigit():
        return (f"Let {name} vary without a recompile: pass it as a tensor, or compile with "
                "dynamic=True; the values 0 and 1 are always specialised, so a graph first "
                "called with one of them compiles again at the next value.")
    return (f"Each value of {name} compiles its own graph: keep to a few values, or make the "
            "choice outside the compiled function.")


def _object_fix(name: str, kind: str) -> str:
    if "Tensor" in kind:
        return (f"Keep one tensor {name} and copy new values into it ({name}.copy_(new)) "
                "instead of binding a new one; torch._dynamo.mark_static_address without "
                "guard=True lets CUDA graphs read it at a fixed address without a recompile.")
    return (f"Pass the same {name} on every call, or choose between them inside the compiled "
            "function.")


def _measurements(view: TraceView, frame: CompiledFrame, cause: _Cause,
                  share: float | None) -> dict[str, Any]:
    failure = cause.first.failure
    total = compile_costs.share(view.trace, frame.compile_ns)
    tensors = [_tensor_facts(view, r, r.tensor) for r in cause.recompiles
               if r.tensor is not None]
    return {"compiles": frame.compiles, "compile_s": round(frame.compile_ns / 1e9, 3),
            RECOMPILE_COUNT: len(cause.recompiles), "recompile_s": round(cause.ns / 1e9, 3),
            "wall_s": round(compile_costs.wall_ns(view.trace) / 1e9, 3),
            **({"compile_share": round(total, 3)} if total is not None else {}),
            **({"recompile_share": round(share, 3)} if share is not None else {}),
            "cause": cause.kind, "value": cause.name, "guard": failure.guard,
            "changes": [r.failure.change for r in cause.recompiles if not r.follows],
            "compile_ids": [r.event.compile_id for r in cause.recompiles],
            **({"tensors": tensors} if tensors else {})}


def _tensor_facts(view: TraceView, r: Recompile, tensor: GuardedTensor) -> dict[str, Any]:
    return {"compile_id": r.event.compile_id, "shape": tensor.shape, "dtype": tensor.dtype,
            "addr": tensor.addr, "bytes": tensor.size, "position": tensor.position,
            **({"allocated_at": _allocated(view, r.allocated_at)}
               if r.allocated_at != NONE else {})}


RULE = Rule(ID, NAME, check, __doc__ or "", severity=ERROR, category=NEUTRAL)
