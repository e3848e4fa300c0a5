"""A captured graph's outputs that the script keeps from one replay to the next.

A graph writes its outputs into the same memory at every replay. A script that keeps the
output tensor itself (``generated.append(static_next)``, ``history[t] = static_out``,
``self.prev = static_out``) keeps a name for that memory, not the values: every entry of
the list shows the last replay's result, and a "previous" output equals the current one.
Reading the output before the next replay, or keeping ``static_out.clone()``, is right.

A manual capture's outputs are the CUDA tensors the capturing frame's names hold at its end
(directly, or one level down in a tuple, list or dict they hold) that no name held at its
begin: what the capture allocated, in the graph's pool. Each is kept as a weak reference to
its storage. At the replays already sampled (the 4th, 8th... and one every 100 ms), the
script's frames on the replaying stack are looked at: their names, and one level of
attributes of the objects they hold. A list, tuple, deque or dict holding two entries or
more on one output's memory kept it across replays; an attribute or a name holding it is
kept where the source reads it after a replay that followed the store
(:mod:`graphdoctor.record.capture.kept_lines`). Each holder is told once, with the line that keeps
it. Nothing runs at other replays; looking costs what :data:`MAX_LOOKED` entries cost.

Out of reach: outputs of ``make_graphed_callables`` and of torch.compile (whose CUDA graph
trees raise on such a read themselves), a holder only a function that has returned can
reach, and, before Python 3.12, the locals of the script's functions (module-level names
and the objects they hold are looked at).
"""

from __future__ import annotations

import itertools
import sys
import types
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from types import CodeType, FrameType
from typing import Any

import torch

from graphdoctor.record import compat
from graphdoctor.record.capture import kept_lines
from graphdoctor.record.frozen.captured_names import bound_values
from graphdoctor.record.recorder import Recorder, Uninstall
from graphdoctor.trace.event_kinds import NONE, KeptOutput
from graphdoctor.trace.model import USER
from graphdoctor.trace.names import KEPT_IN_ATTRIBUTE, KEPT_IN_DICT, KEPT_IN_LIST, KEPT_IN_NAME

MAX_NAMES = 256  # names looked at per frame
MAX_ENTRIES = 16  # the last entries of a container looked at (kept ones pile up there)
MAX_LOOKED = 1024  # entries looked at per sampled replay, over all frames
FRAMES = 8  # the script's frames on the replaying stack looked at
FIRST_LOOK = 3  # the first sampled replay looked at: two kept entries need two replays before
_SEQUENCES = (list, tuple, deque)
_NOT_HOLDERS = (torch.Tensor, type, types.ModuleType, types.FunctionType, types.MethodType)


@dataclass(frozen=True)
class Output:
    name: str  # as the capture's block names it: static_out, outs[0]
    ref: Any  # compat.storage_weak_ref: expired() once freed
    addr: int
    size: int


@dataclass
class _Open:
    code: CodeType  # the capturing frame's code, never the frame
    before: set[int]  # storages its names held when the capture began


class KeptOutputs:
    """Told of manual captures and sampled replays, as the frozen values are."""

    def __init__(self, recorder: Recorder):
        self._rec = recorder
        self._open: dict[int, _Open] = {}
        self.outputs: dict[int, list[Output]] = {}
        self._told: set[tuple[int, str]] = set()

    def capture_began(self, graph: int, frame: FrameType | None) -> None:
        if frame is not None:
            before = {addr for _, _, addr, _ in _tensors(frame)}
            self._open[graph] = _Open(frame.f_code, before)

    def capture_ended(self, graph: int) -> None:
        opened = self._open.pop(graph, None)
        frame: FrameType | None = sys._getframe(1)
        while opened is not None and frame is not None and frame.f_code is not opened.code:
            frame = frame.f_back
        if opened is None or frame is None:
            return
        made = {addr: Output(name, compat.storage_weak_ref(storage), addr, size)
                for name, storage, addr, size in _tensors(frame) if addr not in opened.before}
        if made:
            self.outputs[graph] = list(made.values())

    def finish(self, replays: dict[int, int]) -> None:
        """Nothing to settle: an output kept after the last replay harms nothing."""

    def sampled(self, graph: int, replays: int, caller: FrameType) -> None:
        """A sampled replay of ``graph`` ran, called from ``caller``: what holds its outputs."""
        outputs = self.outputs.get(graph)
        if not outputs or replays < FIRST_LOOK or not self._rec.enabled:
            return
        live = {o.addr: o for o in outputs if not o.ref.expired()}
        budget = [MAX_LOOKED]
        frame: FrameType | None = caller
        for _ in range(FRAMES):
            if frame is None or not live:
                return
            if self._rec.stacks.kind(frame.f_code.co_filename) == USER:
                for holder, how, aliases, output in _holders(frame, live, budget):
                    self._kept(graph, replays, frame, holder, how, aliases, output)
            frame = frame.f_back

    def _kept(self, graph: int, replays: int, frame: FrameType, holder: str, how: str,
              aliases: int, output: Output) -> None:
        path, line, chain = frame.f_code.co_filename, frame.f_lineno or 0, tuple(
            holder.split("."))
        single = how in (KEPT_IN_ATTRIBUTE, KEPT_IN_NAME)
        read = kept_lines.stale_read(path, line, chain) if single else None
        if (graph, holder) in self._told or (single and (read is None or holder == output.name)):
            return
        self._told.add((graph, holder))
        kept = kept_lines.keeping_line(path, line, chain)
        self._rec.emit(KeptOutput(self._rec.now(), graph, output.name, holder, how, aliases,
                                  output.addr, output.size, self._at(frame, kept),
                                  self._at(frame, read), replays))

    def _at(self, frame: FrameType, line: int | None) -> int:
        return self._rec.stacks.from_frame(frame, line) if line is not None else NONE


def _tensors(frame: FrameType) -> Iterator[tuple[str, Any, int, int]]:
    """(name, storage, address, size) of the CUDA tensors ``frame``'s names hold, directly
    or one level down in a tuple, list or dict."""
    for name, value in itertools.islice(bound_values(frame), MAX_NAMES):
        if isinstance(value, torch.Tensor):
            yield from _storage(name, value)
        elif type(value) in (tuple, list):
            for index, item in enumerate(value[:MAX_ENTRIES]):
                if isinstance(item, torch.Tensor):
                    yield from _storage(f"{name}[{index}]", item)
        elif isinstance(value, dict):
            for key, item in itertools.islice(value.items(), MAX_ENTRIES):
                if isinstance(item, torch.Tensor) and isinstance(key, (str, int)):
                    yield from _storage(f"{name}[{key!r}]", item)


def _storage(name: str, tensor: torch.Tensor) -> Iterator[tuple[str, Any, int, int]]:
    try:
        if not on_gpu(tensor):
            return
        storage = tensor.untyped_storage()
        addr, size = storage.data_ptr(), storage.nbytes()
    except (RuntimeError, NotImplementedError, TypeError):  # a subclass without storage
        return
    if addr:
        yield name, storage, addr, size


def on_gpu(tensor: torch.Tensor) -> bool:
    """Whether a tensor can be a graph's output (a capture allocates on the GPU only)."""
    return bool(tensor.is_cuda)


def _address(value: Any) -> int:
    if not isinstance(value, torch.Tensor):
        return 0
    try:
        return int(value.untyped_storage().data_ptr())
    except (RuntimeError, NotImplementedError, TypeError):
        return 0


def _holders(frame: FrameType, live: dict[int, Output],
             budget: list[int]) -> Iterator[tuple[str, str, int, Output]]:
    """(holder, how, entries on the output, output) for what ``frame`` holds an output by."""
    for name, value in itertools.islice(bound_values(frame), MAX_NAMES):
        if budget[0] <= 0:
            return
        yield from _held(name, value, live, budget, KEPT_IN_NAME)
        attributes = None if isinstance(value, _NOT_HOLDERS) else getattr(value, "__dict__", None)
        if isinstance(attributes, dict):
            for attr, item in itertools.islice(attributes.items(), MAX_NAMES):
                if not attr.startswith("_"):
                    yield from _held(f"{name}.{attr}", item, live, budget, KEPT_IN_ATTRIBUTE)


def _held(holder: str, value: Any, live: dict[int, Output], budget: list[int],
          single: str) -> Iterator[tuple[str, str, int, Output]]:
    if isinstance(value, torch.Tensor):
        budget[0] -= 1
        output = live.get(_address(value))
        if output is not None:
            yield holder, single, 1, output
        return
    if isinstance(value, _SEQUENCES):
        entries, how = list(itertools.islice(reversed(value), MAX_ENTRIES)), KEPT_IN_LIST
    elif isinstance(value, dict):
        entries, how = list(itertools.islice(reversed(value.values()), MAX_ENTRIES)), \
            KEPT_IN_DICT
    else:
        return
    budget[0] -= len(entries)
    counts: dict[int, int] = {}
    for entry in entries:
        addr = _address(entry)
        if addr in live:
            counts[addr] = counts.get(addr, 0) + 1
    for addr, count in counts.items():
        if count > 1:
            yield holder, how, count, live[addr]


def install(recorder: Recorder) -> Uninstall:
    """The source: told of manual captures and sampled replays, as the frozen values are."""
    if not compat.storage_weak_refs_available():
        recorder.note("outputs kept across replays", "this torch has no storage weak references")
        return lambda: None
    return recorder.watch_captures(KeptOutputs(recorder))
