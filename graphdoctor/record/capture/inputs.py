"""The memory a captured graph reads, and whether it is still alive when the graph replays.

A graph keeps the addresses of its inputs: if the tensor behind one is freed (``x = new``
instead of ``x.copy_(new)``), later replays read whatever reuses that memory. The bug is a
name rebound in the user's code, so the candidates are the names themselves: when a manual
capture begins, the CUDA tensors bound to names in the capturing frame (its locals, and its
module's globals) are noted with a weak reference to their storage. Nothing runs per op, so
the capture costs what it costs without graphdoctor.

Where the last reference went is kept too: each candidate tensor carries a weak reference
whose callback notes the Python stack when the tensor object dies, which is the line that
rebound its name (or ``del``-ed it), the line to change. The callback only notes (file,
line, function) triples: it runs inside a deallocation, anywhere, so it takes no lock.

A name bound again without the old tensor dying (a list of batches still holds it: ``for x
in batches: g.replay()``) frees nothing, and every replay reads the old tensor while the
script's new data goes unread. So at each of the first replays, where the replay is made
by the capturing function itself, each candidate's name is read again (the frame's own
variable, as it is now); a name that now holds another tensor is reported as rebound, at
the first line after the block that binds it again, read from the source.

Weak references are checked at replays: all of them at each of the first replays, then a few
at a time for every few replays (in one window at the replays the replay path's general lane
makes, at least once a millisecond), so the replay path stays cheap. Only a free followed by a
replay counts (memory released after the last replay harms nothing), and only for a name the
captured block reads: that is settled from the block's source (``captured_names``) the first
time one of its candidates is found freed, which is rare, and never on the replay path of a
healthy program.
"""

from __future__ import annotations

import gc
import sys
import weakref
from dataclasses import dataclass, field
from types import CodeType, FrameType
from typing import Any

import torch

from graphdoctor.record import compat
from graphdoctor.record.frozen import captured_names
from graphdoctor.record.recorder import Recorder
from graphdoctor.record.stacks import qualname
from graphdoctor.trace.event_kinds import FREED, NONE, REBOUND
from graphdoctor.trace.spool import records as sr

MAX_CANDIDATES = 256  # a namespace with more CUDA tensors than this is not a capture script


@dataclass
class _Input:
    name: str
    ref: Any  # compat.storage_weak_ref: expired() once the storage is freed
    addr: int
    size: int
    # a weak reference to the tensor object the name held, whose callback fills ``dropped``
    watch: Any = None
    dropped: list[tuple[str, int, str]] | None = None  # the stack where that object died
    owner: int = NONE  # the earlier graph whose capture made it (it lives in that pool)


DROP_FRAMES = 32  # frames kept of the stack where a watched tensor died


def _dropped_here(item: _Input) -> Any:
    """The callback noting where ``item``'s tensor object died: the caller's stack, the
    line that rebound or deleted its name. It runs inside the tensor's deallocation, so it
    takes no lock, writes nothing but ``item``, and raises nothing; and where the tensor
    dies in a garbage collection (whose frames are wherever the collection began, not the
    line that let it go), it notes nothing."""
    def died(_: Any) -> None:
        if collecting():
            return
        try:
            item.dropped = _stack_here(sys._getframe(1))
        except BaseException:  # noqa: BLE001 - nothing may reach the program from here
            pass
    return died


def _stack_here(frame: FrameType | None,
                limit: int = DROP_FRAMES) -> list[tuple[str, int, str]]:
    frames: list[tuple[str, int, str]] = []
    while frame is not None and len(frames) < limit:
        code = frame.f_code
        frames.append((code.co_filename, frame.f_lineno or 0, qualname(code)))
        frame = frame.f_back
    return frames


_collections: list[int] = [0]  # garbage collections under way in this process


def _on_collection(phase: str, info: dict[str, int]) -> None:
    _collections[0] += 1 if phase == "start" else -1 if _collections[0] else 0


def collecting() -> bool:
    """Whether a garbage collection is under way (a callback then runs inside it)."""
    return _collections[0] > 0


def watch_collections() -> Any:
    """Follow garbage collections while the recording runs; returns the undo."""
    gc.callbacks.append(_on_collection)

    def undo() -> None:
        if _on_collection in gc.callbacks:
            gc.callbacks.remove(_on_collection)
        _collections[0] = 0

    return undo


@dataclass(frozen=True)
class Output:
    """A storage a capture's block left bound to a name in its frame: the graph writes it."""

    name: str
    addr: int
    size: int


@dataclass(frozen=True)
class BlockEnd:
    """Where a manual capture's block ended, and what it left named there."""

    line: int
    outputs: list[Output]


class GraphOutputs:
    """Each graph's outputs by address, while the graph lives: a later capture that reads
    one reads memory of that graph's pool, which the allocator gives to no one but captures
    into that pool, so letting its name go is not a freed input (PyTorch's docs allow two
    graphs to share a pool and pass outputs on when replayed in the order captured)."""

    MOST = 65536  # addresses kept: outputs of graphs the script still holds

    def __init__(self) -> None:
        self._owner: dict[int, int] = {}  # address -> graph
        self._by_graph: dict[int, list[int]] = {}

    def add(self, graph: int, named: list[tuple[int, int]]) -> None:
        if not named or len(self._owner) >= self.MOST:
            return
        for addr, _ in named:
            self._owner[addr] = graph
        self._by_graph[graph] = [addr for addr, _ in named]

    def owner(self, addr: int) -> int:
        return self._owner.get(addr, NONE)

    def alive(self, graph: int) -> bool:
        return graph in self._by_graph

    def forget(self, graph: int) -> None:
        """``graph`` was deleted, or captured again after ``reset()``: its pool goes."""
        for addr in self._by_graph.pop(graph, []):
            if self._owner.get(addr) == graph:
                del self._owner[addr]


@dataclass
class CaptureSite:
    """Where a capture's block is: its file, first and last line, and the frames around it
    as (file, line, function), innermost first."""

    path: str
    begin_line: int
    end_line: int
    frames: list[tuple[str, int, str]]
    code: CodeType | None = None  # the capturing function's (or module's) code


@dataclass
class GraphInputs:
    graph: int
    site: CaptureSite
    inputs: list[_Input] = field(default_factory=list)
    outputs: GraphOutputs | None = None  # the recording's, to ask whether an owner lives
    replays: int = 0
    cursor: int = 0
    freed: set[int] = field(default_factory=set)
    rebound: set[int] = field(default_factory=set)
    unread: set[int] = field(default_factory=set)  # inputs whose name the block never reads

    def __post_init__(self) -> None:
        """The names the block reads, worked out now, at its capture's end, not at one of
        its first replays: a program that races two graphs launches the other one right
        after the first's first replay (the walk of a script's syntax tree took ~0.5 ms
        there, and the race was lost)."""
        if self.inputs:
            captured_names.names_read(self.site.path, self.site.begin_line, self.site.end_line)


def available() -> bool:
    return compat.storage_weak_refs_available()


def candidates(frame: FrameType, outputs: GraphOutputs | None = None) -> list[_Input]:
    """The CUDA tensors bound to names the capturing frame can read, when its capture begins;
    each marked with the earlier graph whose output it is, if any."""
    found: dict[int, _Input] = {}
    for name, value in captured_names.bound_values(frame):
        if len(found) >= MAX_CANDIDATES:
            break
        if isinstance(value, torch.Tensor):
            _note(found, name, value)
    if outputs is not None:
        for item in found.values():
            item.owner = outputs.owner(item.addr)
    return list(found.values())


def outputs(frame: FrameType, before: list[_Input]) -> list[Output]:
    """The CUDA storages named in ``frame`` at the end of its capture that were not named at
    its begin: what the block made, which the graph writes at each replay."""
    seen = {item.addr for item in before}
    made: dict[int, Output] = {}
    for name, value in captured_names.bound_values(frame):
        if len(made) >= MAX_CANDIDATES:
            break
        if isinstance(value, torch.Tensor):
            addr, size = _storage_of(value)
            if addr and addr not in seen and addr not in made:
                made[addr] = Output(name, addr, size)
    return list(made.values())


def _storage_of(tensor: torch.Tensor) -> tuple[int, int]:
    """(address, bytes) of a CUDA tensor's storage; (0, 0) for any other tensor."""
    try:
        if not tensor.is_cuda:
            return 0, 0
        storage = tensor.untyped_storage()
        return int(storage.data_ptr()), int(storage.nbytes())
    except (RuntimeError, NotImplementedError, TypeError):  # a subclass without real storage
        return 0, 0


def _note(found: dict[int, _Input], name: str, tensor: torch.Tensor) -> None:
    addr, size = _storage_of(tensor)
    if addr and addr not in found:
        storage = tensor.untyped_storage()
        item = found[addr] = _Input(name, compat.storage_weak_ref(storage), addr, size)
        try:
            item.watch = weakref.ref(tensor, _dropped_here(item))
        except TypeError:  # a tensor type without weak references: its free is still seen
            pass


def frames_of(frame: FrameType, limit: int = DROP_FRAMES) -> list[tuple[str, int, str]]:
    """The stack from ``frame`` up, as (file, line, function), at most ``limit`` frames: what
    a finding at a line of the captured block is placed in, read when the capture begins."""
    return _stack_here(frame, limit)


EVERY_REPLAY_UNTIL = 16
LATER_EVERY = 8
LATER_WINDOW = 8


def check_at_replay(recorder: Recorder, watched: GraphInputs, replays: int,
                  caller: FrameType) -> None:
    """At each replay the replay path's general lane makes, the graph's ``replays``-th, made
    by ``caller``: every input through the first replays, then as many as the replays since
    the last look call for (the fast lane between them looks at none)."""
    previous, watched.replays = watched.replays, replays
    if replays <= EVERY_REPLAY_UNTIL:
        _check(recorder, watched, watched.inputs)
        if caller.f_code is watched.site.code:
            _check_names(recorder, watched, caller)
        return
    windows = replays // LATER_EVERY - previous // LATER_EVERY
    if windows > 0:
        _check_window(recorder, watched, windows * LATER_WINDOW)


def _check_window(recorder: Recorder, watched: GraphInputs, size: int) -> None:
    """The next ``size`` inputs in turn (all of them where there are fewer)."""
    if not watched.inputs:
        return
    size = min(size, len(watched.inputs))
    start = watched.cursor % len(watched.inputs)
    window = (watched.inputs + watched.inputs)[start:start + size]
    watched.cursor = start + size
    _check(recorder, watched, window)


def _check(recorder: Recorder, watched: GraphInputs, items: list[_Input]) -> None:
    for item in items:
        if item.addr in watched.freed or not item.ref.expired():
            continue
        watched.freed.add(item.addr)
        if watched.outputs is not None and watched.outputs.alive(item.owner):
            continue  # an output of a graph that lives: its pool's memory, not freed
        line = _read_at(watched.site, item.name)
        if line is not None:
            dropped = recorder.stacks.from_named(item.dropped) if item.dropped else -1
            recorder.emit(sr.InputRecord(recorder.now(), watched.graph, FREED, item.addr,
                                         item.size, _stack_at(recorder, watched.site, line),
                                         watched.replays, dropped))


def _check_names(recorder: Recorder, watched: GraphInputs, frame: FrameType) -> None:
    """Each candidate whose name, read in the capturing frame now, holds another tensor
    while the one captured is still alive: the graph reads the old one."""
    for item in watched.inputs:
        if item.addr in watched.rebound or item.addr in watched.freed \
                or item.addr in watched.unread or item.ref.expired():
            continue
        now = captured_names.value_of(frame, item.name)
        if not isinstance(now, torch.Tensor) or _address(now) in (item.addr, 0):
            continue
        line = _read_at(watched.site, item.name)
        if line is None:
            watched.unread.add(item.addr)  # the block never reads it: not looked at again
            continue
        if _still_named(frame, item.addr):
            continue  # another name holds the captured tensor: the script may fill it there
        watched.rebound.add(item.addr)
        site = watched.site
        again = captured_names.bound_again_at(site.path, site.begin_line, site.end_line,
                                              item.name)
        recorder.emit(sr.InputRecord(recorder.now(), watched.graph, REBOUND, item.addr,
                                     item.size, _stack_at(recorder, site, line),
                                     watched.replays,
                                     _stack_at(recorder, site, again) if again else -1))


def _still_named(frame: FrameType, addr: int) -> bool:
    """Whether some name the frame can read still holds a tensor on the storage at ``addr``."""
    return any(isinstance(value, torch.Tensor) and _address(value) == addr
               for _, value in captured_names.bound_values(frame))


def _address(tensor: torch.Tensor) -> int:
    """The address of a tensor's storage; 0 for a subclass without real storage."""
    try:
        return int(tensor.untyped_storage().data_ptr())
    except (RuntimeError, NotImplementedError, TypeError):
        return 0


def _read_at(site: CaptureSite, name: str) -> int | None:
    """The first line of the captured block that reads ``name``, or None if none does."""
    reads = captured_names.names_read(site.path, site.begin_line, site.end_line)
    return reads.get(name)


def _stack_at(recorder: Recorder, site: CaptureSite, line: int) -> int:
    path, _, function = site.frames[0]
    return recorder.stacks.from_named([(path, line, function), *site.frames[1:]])
