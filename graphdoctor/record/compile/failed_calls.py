"""The inputs of a compiled function's call that raised inside torch: what a bug report needs.

When CUDA graph trees fail while recording a reduce-overhead function (torch 2.11's
``check_memory_pool``: "storage data ptrs are not allocated in pool ... Please file an
issue"), the traceback ends in torch and the script's frame it names is the compiled
function's own, at its decorator. What set it off is in the call: a CPU tensor among the
inputs, two inputs on one memory. So, only when a call of the tree raises, its inputs are
written down: each tensor argument of the compiled function (its name, position, device,
dtype, shape, and which earlier one shares its memory), read from the function's frame
(Python 3.12+), and any input of the graph on the CPU that no argument holds; with the
script's line that made the call. Nothing runs for a call that does not raise.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import FrameType
from typing import Any

import torch

from graphdoctor.record import compat
from graphdoctor.record.frozen.captured_names import FRAME_VAR
from graphdoctor.record.recorder import CompiledCall, Recorder
from graphdoctor.trace.event_kinds import CallInput
from graphdoctor.trace.model import USER

MAX_INPUTS = 32  # inputs written per failed call
_DYNAMO = "/torch/_dynamo/"  # the frames that run a compiled function


def failed(recorder: Recorder, call: CompiledCall, inputs: Any, caller: FrameType | None) -> None:
    """A call of a tree raised (``caller``: the frame that called the tree): write its
    inputs. Never raises."""
    try:
        if recorder.enabled:
            _write(recorder, call, inputs, caller)
    except Exception as error:  # noqa: BLE001 - the script's own error is on its way
        recorder.note("inputs of a failed compiled call", f"not written: {error!r}")


def _write(recorder: Recorder, call: CompiledCall, inputs: Any, caller: FrameType | None) -> None:
    function, site = _frames(recorder, caller)
    t, stack = recorder.now(), recorder.stacks.from_frame(site)
    rows = list(_arguments(function)) if function is not None else []
    seen = {addr for _, _, _, addr in rows}
    rows += [(-1, "", tensor, addr) for tensor, addr in _graph_inputs(inputs)
             if addr not in seen and tensor.device.type == "cpu"]
    first_at: dict[int, int] = {}
    for position, name, tensor, addr in rows[:MAX_INPUTS]:
        alias = first_at.setdefault(addr, position) if addr else position
        recorder.emit(CallInput(t, call.fn, position, name, str(tensor.device),
                                str(tensor.dtype).removeprefix("torch."),
                                "x".join(str(n) for n in tensor.shape) or "scalar",
                                alias if alias != position else -1, stack))


def _frames(recorder: Recorder,
            caller: FrameType | None) -> tuple[FrameType | None, FrameType | None]:
    """(the compiled function's frame, if dynamo runs the script's own function; the frame
    of the script's line that called it)."""
    kind = recorder.stacks.kind
    frame = caller
    while frame is not None and not _script(kind, frame):
        frame = frame.f_back
    if frame is None or frame.f_back is None or _DYNAMO not in frame.f_back.f_code.co_filename:
        return None, frame  # a module compiled: the first frame of the script's calls it
    site: FrameType | None = frame.f_back
    while site is not None and not _script(kind, site):
        site = site.f_back
    return frame, site


def _script(kind: Any, frame: FrameType) -> bool:
    path = frame.f_code.co_filename
    return kind(path) == USER and not path.startswith("<") and not compat.is_inductor_code(path)


def _arguments(frame: FrameType) -> Iterator[tuple[int, str, torch.Tensor, int]]:
    """(position, name, tensor, storage address) of the function's tensor arguments."""
    if FRAME_VAR is None:
        return
    code = frame.f_code
    for position, name in enumerate(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]):
        try:
            value = FRAME_VAR(frame, name)
        except (NameError, ValueError):
            continue
        if isinstance(value, torch.Tensor):
            yield position, name, value, _address(value)


def _graph_inputs(inputs: Any) -> Iterator[tuple[torch.Tensor, int]]:
    for value in list(inputs)[:4 * MAX_INPUTS] if isinstance(inputs, (list, tuple)) else ():
        if isinstance(value, torch.Tensor):
            yield value, _address(value)


def _address(tensor: torch.Tensor) -> int:
    try:
        return int(tensor.untyped_storage().data_ptr())
    except (RuntimeError, NotImplementedError, TypeError):
        return 0
