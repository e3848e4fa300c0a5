"""The trace: what happened during one recorded run, as plain data.

Nothing here imports torch. Bulky event kinds (replays, allocations, syncs...) live in
columnar :class:`Table` objects so a million events load quickly; rare, structured things
(graphs, exceptions, compile events) are frozen dataclasses. Times are integer nanoseconds
since the start of the run. ``-1`` means "none" in integer columns (no graph, no stack,
GPU time not measured).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

NONE = -1

# Phases of CUDA graph use, in the order a run usually goes through them.
EAGER = "eager"
WARMUP = "warmup"
CAPTURE = "capture"
REPLAY = "replay"
PHASES = (EAGER, WARMUP, CAPTURE, REPLAY)

# Where a frame's code lives; the culprit of a finding is the innermost USER frame.
USER = "user"
LIBRARY = "lib"
TORCH = "torch"
PYTHON = "python"
FRAME_KINDS = (USER, LIBRARY, TORCH, PYTHON)


class Replay(NamedTuple):
    """One ``CUDAGraph.replay()`` call: host time, and GPU time from CUDA events."""

    t: int
    dur: int
    gpu: int
    graph: int
    stream: int
    thread: int


class Call(NamedTuple):
    """One call of a function graphdoctor times: a captured callee run eagerly, or a
    compiled function's call (mode: eager, warmup, record, replay, skipped)."""

    t: int
    dur: int
    gpu: int
    fn: int
    mode: str
    graph: int


class Alloc(NamedTuple):
    """One caching-allocator action (alloc, free_requested, free_completed, segment_alloc,
    segment_free) with the pool it came from ("default" or a graph pool such as "(1, 0)")."""

    t: int
    action: str
    addr: int
    size: int
    stream: int
    pool: str
    graph: int
    phase: str
    stack: int
    device: int


class Sync(NamedTuple):
    """A host-device synchronization (kind: item, cpu, nonzero, device_synchronize, ...)."""

    t: int
    kind: str
    stream: int
    graph: int
    phase: str
    thread: int
    stack: int


class StreamOp(NamedTuple):
    """A stream or event operation: create, enter, exit, wait_stream, wait_event, record,
    event_wait. ``stream`` is the stream it ran on, ``other`` the stream or event it names."""

    t: int
    op: str
    stream: int
    other: int
    graph: int
    phase: str
    thread: int
    stack: int


class Collective(NamedTuple):
    """A torch.distributed call: ``seq`` counts the calls on its process group, so the same
    seq on two ranks is the same collective; ``dur`` is -1 for one that never returned."""

    t: int
    dur: int
    op: str
    group: str
    seq: int
    bytes: int
    graph: int
    phase: str
    thread: int
    stack: int


class MemorySample(NamedTuple):
    """Bytes the caching allocator had allocated and reserved at a moment of the run."""

    t: int
    allocated: int
    reserved: int
    graph: int
    phase: str


class GpuSample(NamedTuple):
    """One NVML reading of a device: utilisation (%), memory used (bytes), SM clock (MHz)."""

    t: int
    device: int
    util: int
    mem_util: int
    mem_used: int
    sm_clock: int


TABLE_ROWS: dict[str, type[NamedTuple]] = {
    "replays": Replay,
    "calls": Call,
    "allocs": Alloc,
    "syncs": Sync,
    "stream_ops": StreamOp,
    "collectives": Collective,
    "memory": MemorySample,
    "gpu_samples": GpuSample,
}


class Table:
    """Rows of one event kind stored as columns (one list per field)."""

    __slots__ = ("columns", "data", "row_type")

    def __init__(self, row_type: type[NamedTuple], data: dict[str, list[Any]] | None = None):
        self.row_type = row_type
        self.columns: tuple[str, ...] = tuple(row_type._fields)
        self.data: dict[str, list[Any]] = data or {name: [] for name in self.columns}

    def append(self, row: Sequence[Any]) -> None:
        for name, value in zip(self.columns, row):
            self.data[name].append(value)

    def __len__(self) -> int:
        return len(self.data[self.columns[0]])

    def __iter__(self) -> Iterator[Any]:
        make = self.row_type._make
        return (make(values) for values in zip(*(self.data[c] for c in self.columns)))

    def __getitem__(self, index: int) -> Any:
        return self.row_type._make(self.data[c][index] for c in self.columns)

    def column(self, name: str) -> list[Any]:
        return self.data[name]

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Table) and self.row_type is other.row_type
                and self.data == other.data)

    __hash__ = None  # type: ignore[assignment]


def empty_tables() -> dict[str, Table]:
    return {name: Table(row) for name, row in TABLE_ROWS.items()}


@dataclass(frozen=True)
class Frame:
    file: str
    line: int
    func: str
    kind: str = USER


@dataclass(frozen=True)
class Function:
    """A function graphdoctor follows: a callee of a capture, or a compiled function."""

    id: int
    name: str
    kind: str  # "captured" | "compiled" | "graphed"
    file: str = ""
    line: int = 0
    compile_id: str = ""
    copied_inputs: int = 0  # compiled: inputs each replay copies into the graph
    copied_bytes: int = 0


@dataclass(frozen=True)
class Graph:
    """One CUDA graph: its capture and what became of it."""

    id: int
    api: str  # torch.cuda.graph | CUDAGraph | make_graphed_callables | torch.compile
    status: str  # captured | failed | capturing (never ended)
    capture_start: int
    capture_end: int = NONE
    pool: str = ""
    shared_pool: bool = False
    stream: int = 0
    capture_error_mode: str = "global"
    stack: int = NONE
    function: int = NONE
    callees: tuple[int, ...] = ()
    error: int = NONE
    internal: bool = False
    pool_bytes: int = 0
    key: str = ""
    deleted_at: int = NONE
    device: int = 0


@dataclass(frozen=True)
class ErrorLink:
    """One exception in a chain; ``cuda_error`` is the cudaError name if the text has one."""

    type: str
    message: str
    cuda_error: str = ""
    stack: int = NONE


@dataclass(frozen=True)
class ExceptionRecord:
    """An exception graphdoctor saw, with its chain from the first error to the last."""

    id: int
    t: int
    where: str  # capture_begin | capture_end | replay | uncaught | thread
    graph: int = NONE
    thread: int = 0
    chain: tuple[ErrorLink, ...] = ()

    @property
    def root(self) -> ErrorLink:
        return self.chain[0]

    @property
    def raised(self) -> ErrorLink:
        return self.chain[-1]


@dataclass(frozen=True)
class CompileEvent:
    """A torch.compile event: graph_break, recompile, cudagraph_skip, cudagraph_record,
    rerecord, dynamic_shape_warning, partition, compile."""

    t: int
    kind: str
    compile_id: str = ""
    function: str = ""
    reason: str = ""
    detail: str = ""
    key: str = ""
    stack: int = NONE
    dur: int = 0


@dataclass(frozen=True)
class WarningRecord:
    t: int
    category: str
    message: str
    graph: int = NONE
    stack: int = NONE


@dataclass(frozen=True)
class InputEvent:
    """Something that happened to memory a captured graph reads: freed or rebound."""

    t: int
    graph: int
    kind: str  # freed
    addr: int
    size: int
    stack: int = NONE
    replays: int = 0  # replays of the graph so far when it was noticed


@dataclass(frozen=True)
class TeardownEvent:
    """``destroy_process_group`` began or ended; a begin without an end is a teardown hang."""

    t: int
    kind: str  # begin | end
    stack: int = NONE


@dataclass(frozen=True)
class PhaseSpan:
    phase: str
    start: int
    end: int
    graph: int = NONE


@dataclass(frozen=True)
class Device:
    index: int
    name: str
    memory_total: int = 0
    compute_capability: str = ""
    driver: str = ""


@dataclass(frozen=True)
class Note:
    """Something that was not recorded, and why."""

    what: str
    why: str


@dataclass(frozen=True)
class Meta:
    tool_version: str = ""
    argv: tuple[str, ...] = ()
    target: str = ""
    target_kind: str = "path"  # path | module
    cwd: str = ""
    started_at: str = ""
    mode: str = "default"  # default | full
    python: str = ""
    torch: str = ""
    cuda: str = ""
    platform: str = ""
    hostname: str = ""
    cuda_available: bool = False
    devices: tuple[Device, ...] = ()
    not_recorded: tuple[Note, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    rank: int = NONE
    world_size: int = NONE
    backend: str = ""


TIMEOUT = "timeout"  # RunStatus.reason of a run that graphdoctor's --timeout ended


@dataclass(frozen=True)
class RunStatus:
    complete: bool = False
    reason: str = "unknown"  # exited | exception | signal | timeout | killed | not-started
    exit_code: int | None = None
    signal: int | None = None
    last_phase: str = EAGER
    message: str = ""
    wall_ns: int = 0
    stacks_at_end: str = ""  # faulthandler dump on a crash or a time-out


@dataclass
class Trace:
    """Everything recorded in one run. Build with :func:`graphdoctor.trace.assemble`."""

    meta: Meta = field(default_factory=Meta)
    status: RunStatus = field(default_factory=RunStatus)
    frames: list[Frame] = field(default_factory=list)
    stacks: list[tuple[int, ...]] = field(default_factory=list)
    functions: list[Function] = field(default_factory=list)
    graphs: list[Graph] = field(default_factory=list)
    exceptions: list[ExceptionRecord] = field(default_factory=list)
    compile_events: list[CompileEvent] = field(default_factory=list)
    warnings: list[WarningRecord] = field(default_factory=list)
    input_events: list[InputEvent] = field(default_factory=list)
    teardown: list[TeardownEvent] = field(default_factory=list)
    phases: list[PhaseSpan] = field(default_factory=list)
    tables: dict[str, Table] = field(default_factory=empty_tables)
    counters: dict[str, dict[str, int]] = field(default_factory=dict)
    # replays per graph as last reported while the run went on: counts replays whose GPU
    # time was never known because the run ended first
    replay_counts: dict[int, int] = field(default_factory=dict)

    def stack(self, stack_id: int) -> list[Frame]:
        """Frames of a stack, outermost first; empty for NONE."""
        if stack_id < 0 or stack_id >= len(self.stacks):
            return []
        return [self.frames[i] for i in self.stacks[stack_id]]

    def table(self, name: str) -> Table:
        return self.tables[name]

    @property
    def event_count(self) -> int:
        structured = (self.exceptions, self.compile_events, self.warnings, self.input_events)
        return sum(len(t) for t in self.tables.values()) + sum(len(s) for s in structured)
