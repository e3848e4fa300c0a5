"""What torch.compile cost per compiled function: its compiles, their time, its share of the
run, and why each recompile happened.

A function is dynamo's frame F of the compile ids F/N. Each recompile counts under the cause
of the guard that failed for its latest compile (:mod:`graphdoctor.trace.torch_logs.guards`), with
one
exception: a graph compiled after a tensor was re-allocated is specialised afresh on the
Python values of that call (``pos == 0``: 0 and 1 are always specialised), so the recompile
that the next value then causes is the re-allocation's doing, and counts under it. Pure:
the rules and the reports ask the same trace the same question.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from graphdoctor.trace.model import NONE, CompileEvent, GuardedTensor, Trace
from graphdoctor.trace.names import (
    COMPILE,
    COMPILED_FUNCTION,
    CUDAGRAPH_RECORD,
    REALLOCATED_TENSOR,
    RECOMPILE,
    RECORDING_TRIGGER,
    SPECIALISED_VALUE,
)
from graphdoctor.trace.torch_logs import guards
from graphdoctor.trace.torch_logs.guards import GuardFailure


@dataclass(frozen=True)
class Recompile:
    index: int  # the event's row in trace.compile_events
    event: CompileEvent
    failure: GuardFailure  # the guard of its latest compile that failed
    cause: str  # the cause it counts under
    name: str  # the value it counts under (a re-allocated tensor's, for a follow-on)
    follows: str = ""  # the re-allocation's compile id, for a recompile that follows one
    tensor: GuardedTensor | None = None  # the tensor its guard names, as the recorder found it
    allocated_at: int = NONE  # the stack of the allocation that made that tensor's storage


@dataclass(frozen=True)
class CompiledFrame:
    """One compiled function (dynamo's frame F) and what compiling it cost."""

    frame: str
    name: str
    function: int  # its Function id where the run followed its calls, else NONE
    compiles: int
    compile_ns: int
    recompiles: tuple[Recompile, ...]

    @property
    def recompile_ns(self) -> int:
        return sum(r.event.dur for r in self.recompiles)


def frame_of(compile_id: str) -> str:
    return compile_id.split("/", 1)[0]


def compiled_frames(trace: Trace) -> list[CompiledFrame]:
    """Every function torch.compile compiled, in the order of their compile ids."""
    spans: dict[str, dict[str, int]] = {}
    for e in trace.compile_events:
        if e.kind == COMPILE and e.reason != RECORDING_TRIGGER and e.compile_id:
            ids = spans.setdefault(frame_of(e.compile_id), {})
            ids[e.compile_id] = ids.get(e.compile_id, 0) + max(e.dur, 0)
    recompiles = _recompiles(trace)
    frames = sorted(set(spans) | {frame_of(r.event.compile_id) for r in recompiles},
                    key=lambda f: (not f.isdigit(), int(f) if f.isdigit() else 0, f))
    return [_frame(trace, f, spans.get(f, {}), [r for r in recompiles
                                                if frame_of(r.event.compile_id) == f])
            for f in frames]


def _frame(trace: Trace, frame: str, spans: dict[str, int],
           recompiles: list[Recompile]) -> CompiledFrame:
    function = next((fn for fn in trace.functions if fn.kind == COMPILED_FUNCTION
                     and fn.compile_id and frame_of(fn.compile_id) == frame), None)
    name = function.name if function else next(
        (r.event.function for r in recompiles if r.event.function), f"compiled frame {frame}")
    compiles = max(len(spans), len(recompiles) + 1)
    return CompiledFrame(frame, name, function.id if function else NONE, compiles,
                         sum(spans.values()), tuple(recompiles))


def _recompiles(trace: Trace) -> list[Recompile]:
    """Each recompile with the cause it counts under, in time order."""
    out: list[Recompile] = []
    by_id: dict[str, Recompile] = {}
    for index, event in enumerate(trace.compile_events):
        if event.kind != RECOMPILE:
            continue
        failures = [guards.read_failure(r) for r in guards.split_reasons(event.detail)]
        failure = guards.primary(failures) or guards.read_failure(event.reason)
        tensor = _tensor_of(trace, event.compile_id, failure.name)
        recompile = _attributed(Recompile(
            index, event, failure, failure.cause, failure.name or event.key, tensor=tensor,
            allocated_at=tensor.stack if tensor else NONE), by_id)
        by_id[event.compile_id] = recompile
        out.append(recompile)
    return out


def _attributed(recompile: Recompile, by_id: dict[str, Recompile]) -> Recompile:
    """A value's recompile right after a re-allocation counts under the re-allocation."""
    before = by_id.get(recompile.failure.entry)
    if recompile.cause == SPECIALISED_VALUE and before is not None \
            and before.cause == REALLOCATED_TENSOR:
        return dataclasses.replace(recompile, cause=REALLOCATED_TENSOR, name=before.name,
                                   follows=before.event.compile_id)
    return recompile


def _tensor_of(trace: Trace, compile_id: str, name: str) -> GuardedTensor | None:
    return next((t for t in trace.guarded_tensors
                 if compile_id and t.compile_id == compile_id and t.name == name), None)


def sizes_recorded(trace: Trace) -> dict[str, list[str]]:
    """{compile id: the sizes CUDA graph trees recorded a graph for under it} for the
    compiles whose graph has dynamic sizes (a recording's key is its sizes; a static
    graph's is empty). A recording belongs to the compile that began last before it."""
    out: dict[str, list[str]] = {}
    current = ""
    for event in trace.compile_events:
        if event.kind == COMPILE and event.reason != RECORDING_TRIGGER and event.compile_id:
            current = event.compile_id
        elif event.kind == CUDAGRAPH_RECORD and event.key and current:
            out.setdefault(current, []).append(event.key)
    return out


def recording_ns(trace: Trace, frame: str) -> int:
    """The time CUDA graph trees spent recording graphs of one compiled function."""
    return sum(max(e.dur, 0) for e in trace.compile_events if e.kind == COMPILE
               and e.reason == RECORDING_TRIGGER and frame_of(e.compile_id) == frame)


def allocated_at(trace: Trace, addr: int) -> int:
    """Where the storage at ``addr`` was allocated, as the recorder read it from the allocator
    when a guard or a re-recording named it; NONE where the allocator kept no stack (it keeps
    them with --full, or from the first re-allocated or moved tensor on)."""
    return next((t.stack for t in trace.guarded_tensors
                 if addr and t.addr == addr and t.stack != NONE), NONE)


def wall_ns(trace: Trace) -> int:
    """The run's wall time: as the launcher measured it, else up to its last phase."""
    return trace.status.wall_ns or (trace.phases[-1].end if trace.phases else 0)


def share(trace: Trace, ns: int) -> float | None:
    """``ns`` as a share of the run's wall time; None where the run's time is unknown."""
    wall = wall_ns(trace)
    return ns / wall if wall > 0 else None
