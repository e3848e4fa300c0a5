"""The trace: what happened during one recorded run, as plain data.

Nothing here imports torch. The kinds of event and their rows are declared in
:mod:`graphdoctor.trace.event_kinds` (and importable from here); this module holds the rest:
graphs, functions, frames, phases, the run's facts and status. Times are integer nanoseconds
since the start of the run. ``-1`` (:data:`NONE`) means "none" in integer columns (no graph,
no stack, GPU time not measured).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from graphdoctor.trace.anatomy import Anatomy
from graphdoctor.trace.event_kinds import (
    NONE,
    TABLE_ROWS,
    Alloc,
    Call,
    Collective,
    CompileEvent,
    ErrorLink,
    ExceptionRecord,
    GpuSample,
    GuardedTensor,
    InputEvent,
    MemorySample,
    Replay,
    StreamOp,
    Sync,
    Table,
    TeardownEvent,
    WarningRecord,
    empty_tables,
)
from graphdoctor.trace.names import PATH_TARGET

__all__ = [  # the rows of the event kinds, for importers of the trace model
    "NONE", "TABLE_ROWS", "Alloc", "Call", "Collective", "CompileEvent", "ErrorLink",
    "ExceptionRecord", "GpuSample", "GuardedTensor", "InputEvent", "MemorySample", "Replay",
    "StreamOp", "Sync", "Table", "TeardownEvent", "WarningRecord", "empty_tables",
]

# Phases of CUDA graph use, in the order a run usually goes through them.
EAGER = "eager"
WARMUP = "warmup"
CAPTURE = "capture"
REPLAY = "replay"
# graphdoctor's own work inside a capture (its hooks), shown apart from the user's time
OWN = "graphdoctor"
PHASES = (EAGER, WARMUP, CAPTURE, REPLAY, OWN)

# Where a frame's code lives; the culprit of a finding is the innermost USER frame.
USER = "user"
LIBRARY = "lib"
TORCH = "torch"
PYTHON = "python"
FRAME_KINDS = (USER, LIBRARY, TORCH, PYTHON)


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
    # torch work the capture ran at its top level besides its callees (loss.backward,
    # Adam.step): an eager run of the callees alone is not the same step
    uncovered: tuple[str, ...] = ()
    error: int = NONE
    internal: bool = False
    pool_bytes: int = 0
    key: str = ""
    deleted_at: int = NONE
    device: int = 0
    own_ns: int = 0  # time graphdoctor's hooks took inside this capture
    # what the eager figures are calls of (names.CALLEES_BASIS, COVERING_BASIS)
    basis: str = ""
    step: int = NONE  # the user function that replays it, timed before it existed too
    anatomy: Anatomy | None = None  # what it holds, where the driver could be asked
    # GPU ns per replay over runs of replays issued back to back (trace.loop_pace)
    paces: tuple[int, ...] = ()

    @property
    def capture_ns(self) -> int:
        """The capture's own time, without graphdoctor's."""
        if self.capture_end == NONE:
            return 0
        return max(0, self.capture_end - self.capture_start - self.own_ns)


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
class SourceFile:
    """A source file the recording's stacks name, as it was when the run ended: what a reader
    checks a file against before showing a line of it (:mod:`graphdoctor.report.source_lines`)."""

    file: str
    size: int
    sha256: str


@dataclass(frozen=True)
class Meta:
    tool_version: str = ""
    argv: tuple[str, ...] = ()
    target: str = ""
    target_kind: str = PATH_TARGET  # one of the target kinds of graphdoctor.trace.names
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
    sources: tuple[SourceFile, ...] = ()  # the digests of the files its stacks name
    # the wall clock (ns since the epoch) at the trace's time 0, which lines up the ranks of
    # a job (graphdoctor.facts.job_clock); 0 where it was not recorded (before schema 1.14)
    clock_unix_ns: int = 0
    # the recording process's pid; for a process the script started (target_kind "child"),
    # its parent's pid and its command line (before schema 1.15: -1, -1, ())
    pid: int = NONE
    parent_pid: int = NONE
    command: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunStatus:
    complete: bool = False
    reason: str = "unknown"  # one of graphdoctor.trace.endings
    exit_code: int | None = None
    signal: int | None = None
    last_phase: str = EAGER
    message: str = ""
    wall_ns: int = 0
    stacks_at_end: str = ""  # faulthandler dump on a crash or a time-out
    # why the recording stopped before the run did (its spool could not be written), or ""
    recording_stopped: str = ""


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
    guarded_tensors: list[GuardedTensor] = field(default_factory=list)
    warnings: list[WarningRecord] = field(default_factory=list)
    input_events: list[InputEvent] = field(default_factory=list)
    teardown: list[TeardownEvent] = field(default_factory=list)
    phases: list[PhaseSpan] = field(default_factory=list)
    tables: dict[str, Table[Any]] = field(default_factory=empty_tables)
    counters: dict[str, dict[str, int]] = field(default_factory=dict)
    # replays per graph as last reported while the run went on: counts replays whose GPU
    # time was never known because the run ended first
    replay_counts: dict[int, int] = field(default_factory=dict)

    def stack(self, stack_id: int) -> list[Frame]:
        """Frames of a stack, outermost first; empty for NONE."""
        if stack_id < 0 or stack_id >= len(self.stacks):
            return []
        return [self.frames[i] for i in self.stacks[stack_id]]

    def table(self, name: str) -> Table[Any]:
        return self.tables[name]

    @property
    def event_count(self) -> int:
        structured = (self.exceptions, self.compile_events, self.guarded_tensors, self.warnings,
                      self.input_events)
        return sum(len(t) for t in self.tables.values()) + sum(len(s) for s in structured)
