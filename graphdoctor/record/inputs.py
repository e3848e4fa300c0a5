"""The memory a captured graph reads, and whether it is still alive when the graph replays.

A graph keeps the addresses of its inputs: if the tensor behind one is freed (``x = new``
instead of ``x.copy_(new)``), later replays read whatever reuses that memory. During a
manual capture a dispatch mode notes the storages that captured ops read; those not
allocated by the capture itself are the graph's external inputs. Weak references to them
are checked before replays: all of them at each of the first replays, then a few at a time
every few replays, so the replay path stays cheap. Only a free followed by a replay counts:
memory released after the last replay harms nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from graphdoctor.record.recorder import Recorder

try:
    from torch.multiprocessing.reductions import StorageWeakRef
except ImportError:  # pragma: no cover - present in every release graphdoctor supports
    StorageWeakRef = None


@dataclass
class _Input:
    ref: Any
    addr: int
    size: int
    stack: int


@dataclass
class GraphInputs:
    graph: int
    inputs: list[_Input] = field(default_factory=list)
    replays: int = 0
    cursor: int = 0
    freed: set[int] = field(default_factory=set)


class InputCollector(TorchDispatchMode):
    """Notes every CUDA storage that an op reads while the capture runs."""

    def __init__(self, recorder: Recorder):
        super().__init__()
        self._recorder = recorder
        self.seen: dict[int, _Input] = {}

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # By default torch wraps __torch_dispatch__ in a dynamo-disable, whose first call
        # imports torch._dynamo: about 2 s, spent inside the user's first capture.
        return False

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        for leaf in tree_leaves((args, kwargs or {})):
            if isinstance(leaf, torch.Tensor) and leaf.is_cuda:
                self._note(leaf)
        return func(*args, **(kwargs or {}))

    def _note(self, tensor: torch.Tensor) -> None:
        try:
            storage = tensor.untyped_storage()
            addr = storage.data_ptr()
        except (RuntimeError, NotImplementedError):
            return
        if addr and addr not in self.seen:
            self.seen[addr] = _Input(StorageWeakRef(storage), addr, storage.nbytes(),
                                     self._recorder.stacks.capture(1))


def available() -> bool:
    return StorageWeakRef is not None


def external_inputs(collector: InputCollector, graph: int,
                    allocated_in_capture: set[int]) -> GraphInputs:
    kept = [i for addr, i in collector.seen.items() if addr not in allocated_in_capture]
    return GraphInputs(graph, kept)


EVERY_REPLAY_UNTIL = 16
LATER_EVERY = 8
LATER_WINDOW = 8


def before_replay(recorder: Recorder, watched: GraphInputs) -> None:
    watched.replays += 1
    if watched.replays <= EVERY_REPLAY_UNTIL:
        _check(recorder, watched, watched.inputs)
    elif watched.replays % LATER_EVERY == 0 and watched.inputs:
        start = watched.cursor % len(watched.inputs)
        window = (watched.inputs + watched.inputs)[start:start + LATER_WINDOW]
        watched.cursor = start + LATER_WINDOW
        _check(recorder, watched, window)


def _check(recorder: Recorder, watched: GraphInputs, items: list[_Input]) -> None:
    for item in items:
        if item.addr not in watched.freed and item.ref.expired():
            watched.freed.add(item.addr)
            recorder.emit(["input", recorder.now(), watched.graph, "freed", item.addr, item.size,
                           item.stack, watched.replays])
