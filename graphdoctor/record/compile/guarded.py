"""The tensors a recompile's failed guards name, found where dynamo found them.

A guard's text says which value failed (``L['self']._modules['kv']._buffers['k_cache']``)
and how (``size mismatch at index 2. expected 48, actual 80``), but not which tensor that
was: a new input, or a buffer the program allocated again. While dynamo asks for the
reasons, the frame it is about to compile again is at hand, so each guard's source is
followed from that frame's locals or globals, by plain attribute and item steps only
(:func:`graphdoctor.trace.torch_logs.guards.source_steps`). The tensor the latest compile's guard
names is recorded with its position among the arguments, its shape, its storage's address
and size, and the stack the allocator keeps for that storage's block (where a history with
stacks is on), which names the line that allocated it. A CUDA tensor re-allocated at a new
size also turns the allocator's stacks on from then on (``AllocatorWatch.watch_allocations``):
the first re-allocation was made before anyone looked, the next ones are not.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any, Concatenate, ParamSpec

import torch

from graphdoctor.record import compat
from graphdoctor.record.recorder import Recorder
from graphdoctor.trace.names import REALLOCATED_TENSOR
from graphdoctor.trace.spool import records as sr
from graphdoctor.trace.torch_logs import guards, rerecords
from graphdoctor.trace.torch_logs.guards import Steps

MAX_MOVED = 64  # moved inputs recorded per re-recording
_MISSING = object()
P = ParamSpec("P")


def _never_raises(record: Callable[Concatenate[Recorder, P], None]
                  ) -> Callable[Concatenate[Recorder, P], None]:
    """Runs inside torch's recompile and logging: an error here is noted, never raised into
    the script's compile."""
    @functools.wraps(record)
    def safely(recorder: Recorder, /, *args: P.args, **kwargs: P.kwargs) -> None:
        try:
            record(recorder, *args, **kwargs)
        except Exception as error:  # noqa: BLE001
            recorder.note("tensors named by recompiles and re-recordings", repr(error))

    return safely


@_never_raises
def record_tensors(recorder: Recorder, reasons: list[str], frame: Any) -> None:
    """Record the tensor the guard of the latest compile names, if its guard named one; if
    it was re-allocated, keep allocation stacks from now on."""
    failure = guards.primary([guards.read_failure(reason) for reason in reasons])
    steps = guards.source_steps(failure.source) if failure is not None else None
    found = _follow(steps, frame) if steps is not None else _MISSING
    if failure is None or steps is None or not isinstance(found, torch.Tensor):
        return
    record = _tensor_record(recorder, failure.source, _position(steps, frame), found)
    memory = recorder.memory
    if memory is not None and found.is_cuda:
        [stack] = memory.stacks_at([record.addr])
        record = record._replace(stack=stack)
    recorder.emit(record)
    if failure.cause == REALLOCATED_TENSOR and found.is_cuda and memory is not None:
        memory.watch_allocations("the first re-allocated tensor torch.compile saw")


@_never_raises
def record_moved(recorder: Recorder, message: str,
                 modules: Iterable[torch.nn.Module]) -> None:
    """Record the static inputs a CUDA graph trees' "Re-recording" message says moved, with
    their new address, the name of the parameter or buffer of a compiled module now there,
    and where that was allocated; keep allocation stacks from now on."""
    moved = rerecords.moved_inputs(message)[:MAX_MOVED]
    memory = recorder.memory
    if not moved or memory is None:
        return
    stacks = memory.stacks_at([m.new for m in moved])
    names = _tensor_names(modules, {m.new for m in moved})
    compile_id = compat.current_compile_id()
    recorder.emit_many([sr.GuardedTensor(recorder.now(), compile_id, m.name, -1, [], "", m.new,
                                         0, -1, stack, names.get(m.new, ""))
                        for m, stack in zip(moved, stacks)])
    memory.watch_allocations("the first static input that moved")


def _tensor_names(modules: Iterable[torch.nn.Module], addrs: set[int]) -> dict[int, str]:
    """The modules' parameters and buffers whose storage begins at one of the addresses,
    by their qualified names (``model.layers.0.self_attn.q_proj.weight``)."""
    names: dict[int, str] = {}
    for module in list(modules):  # a WeakSet: taken whole before iterating
        for name, tensor in (*module.named_parameters(), *module.named_buffers()):
            addr = tensor.untyped_storage().data_ptr() if tensor.is_cuda else 0
            if addr in addrs:
                names.setdefault(addr, name)
    return names


def _tensor_record(recorder: Recorder, source: str, position: int,
                   found: torch.Tensor) -> sr.GuardedTensor:
    try:
        storage = found.untyped_storage()
        addr, size = int(storage.data_ptr()), int(storage.nbytes())
    except (RuntimeError, NotImplementedError):  # a tensor without storage (meta, subclass)
        addr, size = 0, 0
    return sr.GuardedTensor(recorder.now(), compat.current_compile_id(), source,
                            position, [int(n) for n in found.shape],
                            str(found.dtype).removeprefix("torch."), addr, size,
                            found.device.index or 0)


def _follow(steps: Steps, frame: Any) -> Any:
    """The value a guard's source (read into ``steps``) names in ``frame``, or _MISSING."""
    scope, name, path = steps
    try:
        value = _root(frame, scope, name)
        for kind, key in path:
            value = getattr(value, str(key)) if kind == "attr" else value[key]
    except Exception:  # noqa: BLE001 - the script's objects may refuse; then it is not found
        return _MISSING
    return value


def _root(frame: Any, scope: str, name: str) -> Any:
    """A name in the frame's locals (``L``), its globals (``G``), or, unscoped, the first
    that has it."""
    if scope == "L" or (not scope and name in frame.f_locals):
        return frame.f_locals[name]
    return frame.f_globals[name]


def _position(steps: Steps, frame: Any) -> int:
    """The argument's position where the source is one of the compiled function's
    arguments itself, else -1."""
    code = getattr(frame, "f_code", None)
    if steps[0] == "G" or steps[2] or code is None:
        return -1
    arguments = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    return arguments.index(steps[1]) if steps[1] in arguments else -1

