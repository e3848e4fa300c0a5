"""The recorder: shared state of one recording, and the list of sources that feed it.

Each source has an ``install(recorder) -> uninstall`` that patches one corner of torch
(graphs, syncs, streams, memory, torch.compile, NVML). Sources talk to the spool only
through the recorder, which owns the clock, the stack table and the ids it hands out. What
sources share goes through the recorder too, typed here: the GPU timer (``timer``), the
allocator watch the capture source asks at each capture boundary (``memory``), the NVTX
ranges (``nvtx``), the capture source's ``follow`` (for a caller that captures a function
itself), and the captures and compiled calls in progress. Imports no torch: the
child builds the recorder before the script imports it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import CodeType, FrameType
from typing import Any, Protocol

from graphdoctor.record.device.nvtx_ranges import NvtxRanges
from graphdoctor.record.stacks import StackTable, qualname
from graphdoctor.trace.event_kinds import Timed
from graphdoctor.trace.names import GRAPHS_ENV, GRAPHS_OFF
from graphdoctor.trace.spool import records as sr
from graphdoctor.trace.spool.file import SpoolWriter
from graphdoctor.trace.spool.records import SpoolRecord

Uninstall = Callable[[], None]
# (start event, end event, stream, the stream's cudaStream_t handle)
TimerToken = tuple[Any, Any, Any, int]


class GpuTimer(Protocol):
    """GPU time of replays and calls (``graphdoctor.record.device.timing.EventTimer``): once CUDA
    is up, on ``recorder.timer``."""

    untimed: int  # calls left untimed

    def start(self) -> TimerToken | None: ...

    def stop(self, token: TimerToken, row: Timed) -> None: ...

    def end(self, token: TimerToken) -> None: ...

    def settle(self, token: TimerToken, row: Timed) -> None: ...

    def release(self, token: TimerToken) -> None: ...

    def resolve(self, wait: bool = False) -> None: ...

    def forget(self, graph: int) -> None: ...


TimerSource = Callable[[], GpuTimer | None]  # where a source finds the timer it uses


class CaptureMemory(Protocol):
    """What the capture source asks of the allocator
    (``graphdoctor.record.device.memory.AllocatorWatch``, on ``recorder.memory``)."""

    def capture_starting(self, graph: int) -> None:
        """A capture begins: sample the allocator's totals."""
        ...

    def capture_ended(self, graph: int, device: int, pool: tuple[int, int] | None,
                      stack: int, outputs: list[tuple[int, int]] | None = None) -> int:
        """Record what the capture allocated (``outputs``: what its block left named, as
        (address, bytes)); return the bytes the graph's pool reserves."""
        ...

    def sample(self, graph: int) -> None:
        """Record the allocator's totals now (the replay of ``graph``, or -1)."""
        ...

    def finish(self) -> None:
        """The run ends: record what is still pending."""
        ...

    def watch_allocations(self, why: str) -> None:
        """From now on, keep each live block's allocation stack."""
        ...

    def stacks_at(self, addrs: list[int]) -> list[int]:
        """The allocation stack of the live block at each address, -1 where none was kept."""
        ...


class EagerClaims(Protocol):
    """The user's functions' calls kept from before anything named them
    (``graphdoctor.record.eager.eager_history.EagerHistory``, on ``recorder.history``)."""

    def claim(self, code: CodeType, fn: int, part: bool = False) -> None:
        """``code`` is function ``fn``: its kept calls become its eager calls (a torch
        function's only where it is ``part`` of an inline captured block)."""
        ...

    def covering(self, makes: Sequence[str]) -> CodeType | None:
        """A user function that made every call in ``makes`` (an inline captured block's),
        with kept calls to time it by; None if none did."""
        ...

    def has_calls(self, code: CodeType) -> bool:
        """Whether ``code`` (a torch step part the user's code called) has kept calls."""
        ...

    def replaying(self, graph: int) -> None:
        """``graph`` replays on this thread: the user function it replays inside, if it
        ran before the graph existed, becomes the graph's step (``GraphStep``)."""
        ...

    def argument_values(self, code: CodeType, name: str) -> list[Any]:
        """The numbers the kept eager calls of ``code`` were given for argument ``name``."""
        ...


class FrozenWatch(Protocol):
    """The host values graphs took by value (``graphdoctor.record.frozen.frozen_values``, on
    ``recorder.frozen``): the graphs source tells it of manual captures and of the replays
    it samples anyway, so comparing costs no replay anything."""

    def capture_began(self, graph: int, frame: FrameType | None) -> None:
        """A manual capture began; its block runs in ``frame``."""
        ...

    def capture_ended(self, graph: int) -> None: ...

    def sampled(self, graph: int, replays: int, caller: FrameType) -> None:
        """``graph``'s ``replays``-th replay ran, called from ``caller``, and is sampled."""
        ...

    def finish(self, replays: dict[int, int]) -> None:
        """The recording ends; ``replays``: each graph's replays."""
        ...


class CaptureWatches:
    """The watches told of manual captures and sampled replays, as one ``recorder.frozen``
    (the frozen values, the outputs kept across replays): each call reaches each of them,
    and one that raises is noted and told nothing more, never the script's problem."""

    def __init__(self, recorder: Recorder):
        self._rec = recorder
        self.watches: list[FrozenWatch] = []

    def _each(self, call: Callable[[FrozenWatch], None]) -> None:
        for watch in list(self.watches):
            try:
                call(watch)
            except Exception as error:  # noqa: BLE001 - never the script's problem
                self.watches.remove(watch)
                self._rec.note(type(watch).__name__, f"stopped: {error!r}")

    def capture_began(self, graph: int, frame: FrameType | None) -> None:
        self._each(lambda watch: watch.capture_began(graph, frame))

    def capture_ended(self, graph: int) -> None:
        self._each(lambda watch: watch.capture_ended(graph))

    def sampled(self, graph: int, replays: int, caller: FrameType) -> None:
        self._each(lambda watch: watch.sampled(graph, replays, caller))

    def finish(self, replays: dict[int, int]) -> None:
        self._each(lambda watch: watch.finish(replays))


# Parts that can be switched off, to measure what each costs (bench/overhead.py --variants):
# GRAPHDOCTOR_OFF="graphs,devices,syncs,streams,memory,timing,eager_calls,eager_history,anatomy,
# frozen_values,kept_outputs"
OFF_ENV = "GRAPHDOCTOR_OFF"


@dataclass(frozen=True)
class RecordConfig:
    mode: str = "default"  # default | full (allocation stacks for the whole run)
    off: frozenset[str] = frozenset()  # parts switched off by GRAPHDOCTOR_OFF
    nvml_interval_s: float = 0.1
    max_memory_entries: int = 1_000_000
    graphs_off: bool = False  # GRAPHS_ENV=GRAPHS_OFF: the run's CUDA graphs, where it can

    @property
    def eager_calls(self) -> bool:
        """Time eager calls of captured functions."""
        return "eager_calls" not in self.off

    @property
    def allocations(self) -> bool:
        """Record the allocations of captures."""
        return "memory" not in self.off


@dataclass
class CaptureState:
    graph: int
    stream: int
    pool: str
    api: str
    function: int
    region_error: int = -1  # an exception raised inside the captured block
    stack: int = -1  # where the capture began
    device: int = 0
    callees: list[CodeType] = field(default_factory=list)  # code objects the capture ran
    uncovered: list[str] = field(default_factory=list)  # torch work it ran besides them
    # that torch work's code, where it is a step's part (step_parts.torch_step_part), by name
    torch_parts: dict[str, CodeType] = field(default_factory=dict)
    makes: list[str] = field(default_factory=list)  # what its top level called (calls.call_key)
    own: list[tuple[int, int]] = field(default_factory=list)  # graphdoctor's own time in it


@dataclass
class CompiledCall:
    """A call of a compiled function under CUDAGraph Trees, in progress on one thread: the
    capture source marks it captured or replayed, the torch.compile source records it."""

    fn: int
    compile_id: str
    captured: bool = False
    replayed: bool = False


class Recorder:
    """Clock, ids and spool shared by every source of one recording."""

    def __init__(self, spool: SpoolWriter, config: RecordConfig | None = None):
        self.spool = spool
        self.config = config or RecordConfig()
        self.stacks = StackTable(spool.write)
        self.t0 = time.perf_counter_ns()
        self.unix0 = time.time_ns()
        self.enabled = True
        self.in_warmup = False  # inside make_graphed_callables, before its first capture
        self.captures: dict[int, CaptureState] = {}  # thread ident -> capture in progress
        # thread ident -> compiled call in progress
        self.compiled_call: dict[int, CompiledCall] = {}
        self._threads: dict[int, int] = {threading.main_thread().ident or 0: 0}
        self._next = {"graph": 0, "fn": 0, "exc": 0, "coll": 0}
        self._functions: dict[Any, int] = {}
        self._lock = threading.Lock()
        self._uninstalls: list[Uninstall] = []
        self.timer: GpuTimer | None = None  # once CUDA is up (session starts it)
        self.memory: CaptureMemory | None = None  # session wires it before the sources
        self.history: EagerClaims | None = None  # the eager history source, once installed
        self.frozen: FrozenWatch | None = None  # the frozen values source, once installed
        self.replays: dict[int, int] = {}  # graph id -> its replays so far (graphs counts)
        # graphdoctor's frames that only pass the user's own torch call through (the frozen
        # values' function mode): a sync or warning torch raises below one is the line's
        # above it, not graphdoctor's
        self.transparent: set[CodeType] = set()
        self.nvtx = NvtxRanges()  # session enables them where the nvtx package is installed
        # graphdoctor's own profiler is recording (--full's kernel times): not the script's
        self.profiling_itself = False
        # called twice a second from the flushing thread; a source may also emit in one
        self.heartbeats: list[Callable[[], SpoolRecord | None]] = []
        # the capture source's, while it is installed: follow a function the caller is about
        # to capture itself (``graphdoctor.check``), see ``graphs._GraphHooks.follow``
        self.follow: Callable[[Any], bool] | None = None

    # -- clock and ids -------------------------------------------------------------------
    def now(self) -> int:
        return time.perf_counter_ns() - self.t0

    def from_unix_us(self, time_us: float) -> int:
        return int(time_us * 1000) - self.unix0

    def thread(self) -> int:
        return self.thread_of(threading.get_ident())

    def thread_of(self, ident: int) -> int:
        """The small number of a thread, by its ident: the main thread is 0."""
        index = self._threads.get(ident)
        if index is None:
            with self._lock:
                index = self._threads.setdefault(ident, len(self._threads))
        return index

    def new_id(self, kind: str) -> int:
        with self._lock:
            value = self._next[kind]
            self._next[kind] = value + 1
        return value

    def known_function(self, key: Any) -> int | None:
        return self._functions.get(key)

    def function_id(self, key: Any, name: str, kind: str, file: str = "", line: int = 0,
                    compile_id: str = "") -> int:
        fn = self._functions.get(key)
        if fn is None:
            fn = self.new_id("fn")
            self._functions[key] = fn
            self.emit(sr.FunctionRecord(fn, name, kind, file, line, compile_id))
        return fn

    def code_function_id(self, code: CodeType, kind: str, key: Any = None) -> int:
        """``function_id`` of a Python function, named and placed by its code object (keyed
        by the code itself unless ``key`` says otherwise)."""
        return self.function_id(code if key is None else key, qualname(code), kind,
                                code.co_filename, code.co_firstlineno)

    # -- capture state -------------------------------------------------------------------
    @property
    def capturing_anywhere(self) -> bool:
        return bool(self.captures)

    def capture_on_this_thread(self) -> CaptureState | None:
        return self.captures.get(threading.get_ident()) if self.captures else None

    def capturing_graph(self) -> int:
        """The graph this thread is capturing, or -1."""
        state = self.capture_on_this_thread()
        return state.graph if state is not None else -1

    # -- output --------------------------------------------------------------------------
    def emit(self, record: SpoolRecord) -> None:
        if self.enabled:
            self.spool.write(record)

    def emit_many(self, records: Sequence[SpoolRecord]) -> None:
        if self.enabled and records:
            self.spool.write_many(records)

    def heartbeat(self) -> None:
        """Called twice a second from the flushing thread: progress a crash or a hang must
        not lose (how many replays each graph has had, timed or not)."""
        for beat in list(self.heartbeats):
            try:  # one source's failure is not every other's
                record = beat()
            except Exception:  # noqa: BLE001 - the next beat tries again
                continue
            if record is not None:
                self.emit(record)

    def note(self, what: str, why: str) -> None:
        self.emit(sr.NoteRecord(what, why))

    def watch_captures(self, watch: FrozenWatch) -> Uninstall:
        """Tell ``watch`` of manual captures and sampled replays (through ``frozen``, which
        the graphs source calls); the undo stops telling it."""
        if not isinstance(self.frozen, CaptureWatches):
            self.frozen = CaptureWatches(self)
        watches = self.frozen
        watches.watches.append(watch)

        def stop() -> None:
            if watch in watches.watches:
                watches.watches.remove(watch)
            if not watches.watches and self.frozen is watches:
                self.frozen = None

        return stop

    def add_uninstall(self, undo: Uninstall) -> None:
        self._uninstalls.append(undo)

    def install(self, sources: list[Callable[[Recorder], Uninstall | None]]) -> None:
        for install in sources:
            try:
                undo = install(self)
            except Exception as error:  # noqa: BLE001 - a broken source must not stop the run
                self.note(getattr(install, "__module__", "source"), f"failed to install: {error!r}")
                continue
            if undo is not None:
                self._uninstalls.append(undo)

    def uninstall(self) -> None:
        while self._uninstalls:
            undo = self._uninstalls.pop()
            try:
                undo()
            except Exception as error:  # noqa: BLE001
                self.note("uninstall", repr(error))

    def detach_after_fork(self) -> None:
        """A forked child (a DataLoader worker) must not write into the parent's spool."""
        self.enabled = False
        self.spool.detach()


def patch(owner: Any, name: str, make: Callable[[Any], Any]) -> Uninstall:
    """Replace ``owner.name`` with ``make(original)``; return the undo."""
    original = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
    wrapped = isinstance(original, (staticmethod, classmethod))
    replacement = make(original.__func__ if wrapped else original)
    if wrapped:
        replacement = type(original)(replacement)
    setattr(owner, name, replacement)
    return lambda: setattr(owner, name, original)


def register_fork_guard(recorder: Recorder) -> None:
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=recorder.detach_after_fork)


def new_recorder(spool: SpoolWriter, mode: str) -> Recorder:
    """A recorder for the run, its parts switched off as ``GRAPHDOCTOR_OFF`` says, and CUDA
    graphs too where ``GRAPHDOCTOR_GRAPHS`` says "off" (:mod:`.graphs_off`). It records
    exceptions from the start; its sources are installed once torch is imported."""
    off = frozenset(p.strip() for p in os.environ.get(OFF_ENV, "").split(",") if p.strip())
    graphs_off = os.environ.get(GRAPHS_ENV, "") == GRAPHS_OFF
    return Recorder(spool, RecordConfig(mode, off, graphs_off=graphs_off))
