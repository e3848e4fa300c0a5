"""The kinds of event a trace holds, declared once: their rows, where each lives, what it
is called, its spool tag, and whether it falls in a phase.

A columnar kind's row is its spool record too: :mod:`graphdoctor.trace.spool.records` adds
the tags of :data:`RECORDED` to its own, so the recorder writes the row, assembly reads it
back as written, and the report schema's columns are generated from it
(:mod:`graphdoctor.report.schema_tables`). The report's counts, the Chrome export, and the
TUI's summary, event details, search and timeline iterate :data:`KINDS`, with a view of
their own only for the kinds they know better; how a kind is drawn (glyph, colour) lives
with the views (:mod:`graphdoctor.tui.palette`), which draw a kind they do not know yet
with a plain mark. So a new kind of event, recorded, in the report and on the timeline, is
two edits: its row and entry here, and the recorder source that writes it.

Bulky kinds (replays, allocations, syncs...) live in columnar :class:`Table` objects so a
million events load quickly; rare, structured ones (exceptions, compile events) are frozen
dataclasses in lists.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, fields
from typing import Any, Generic, NamedTuple, Protocol, TypeVar

from graphdoctor import units

NONE = -1  # "none" in integer columns: no graph, no stack, GPU time not measured
# A replay's host time (dur) where none was taken: a launch CUPTI saw (--cupti) is known on
# the GPU only. A moment on the timeline, and no host figure anywhere (no call takes 0 ns).
HOST_NOT_TIMED = 0

# A columnar kind's row is also its spool record (tag in its EventKind below): the recorder
# writes it positionally, field by field, but for ``phase``, which assembly fills in (it
# is last, with a default, and never written to the spool). Older spools lack fields added
# since at the end: those have defaults.


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
    stack: int
    device: int = 0  # written since schema 1.0 multi-device support
    phase: str = ""


class Sync(NamedTuple):
    """A host-device synchronization (kind: item, cpu, nonzero, device_synchronize, ...)."""

    t: int
    kind: str
    stream: int
    graph: int
    thread: int
    stack: int
    phase: str = ""


class ReplaySite(NamedTuple):
    """Where a graph that shares its memory pool with another was replayed, on which stream,
    for its timed replays (its first ones, then a sample): two such graphs replayed on two
    streams with nothing ordering them write the same memory at once."""

    t: int
    graph: int
    stream: int
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
    thread: int
    stack: int
    phase: str = ""


class Collective(NamedTuple):
    """A torch.distributed call: ``seq`` counts the calls on its process group, so the same
    seq on two ranks is the same collective; ``dur`` is -1 for one that never returned.
    Assembled from the recorder's begin and end records, not written as one."""

    t: int
    dur: int
    op: str
    group: str
    seq: int
    bytes: int
    graph: int
    thread: int
    stack: int
    phase: str = ""


class MemorySample(NamedTuple):
    """Bytes the caching allocator had allocated and reserved at a moment of the run."""

    t: int
    allocated: int
    reserved: int
    graph: int
    phase: str = ""


class GpuSample(NamedTuple):
    """One NVML reading of a device: utilisation (%), memory used (bytes), SM clock (MHz)."""

    t: int
    device: int
    util: int
    mem_util: int
    mem_used: int
    sm_clock: int


class Instantiation(NamedTuple):
    """A captured graph made executable (``cuGraphInstantiate*``) before its first launch:
    the host time it took, at the line that asked (seen through CUPTI, ``--cupti``)."""

    t: int
    dur: int
    graph: int
    stack: int
    phase: str = ""


class GcPause(NamedTuple):
    """A Python garbage collection long enough to hold up the host, or a full one
    (``torch.cuda.graph`` runs a full one before each capture): the host stood still for
    ``dur``, with ``collected`` objects freed."""

    t: int
    dur: int
    generation: int
    collected: int
    thread: int
    phase: str = ""


class LeftRunning(NamedTuple):
    """A process the script left running when the run was over (a helper in a session of
    its own, a worker whose parent died), which graphdoctor then ended; ``survived`` is 1
    for one still there after SIGKILL. At the run's end, on graphdoctor's own clock (the
    recording's starts a moment later, so it may fall just past the last event)."""

    t: int
    pid: int
    name: str
    survived: int


class FrozenValue(NamedTuple):
    """A Python number a captured graph took by value (``name``, as the source or the
    optimizer calls it, ``held_by`` an optimizer, a variable, an argument or an attribute
    of ``owner``), or other host state the capture read (``use``: a module's mode, hooks,
    weights or requires_grad, a value that chose a tensor or a branch, a backend flag),
    seen with another: by an eager call of the same function before the capture, or after
    it (``seen``: how, ``t``: when, ``stack``: the line that changed it, where known).
    ``site``: where the graph took it. ``replays``: the graph's replays known to have run
    before the change. ``changes``: its changes so far. ``tensor_fix``: 1 where the torch
    that recorded it accepts a device tensor there and its schedulers update it in
    place."""

    t: int
    graph: int
    name: str
    held_by: str
    owner: str
    captured: str  # repr() of the value the graph holds
    value: str  # repr() of the other one
    seen: str
    site: int
    stack: int
    replays: int
    changes: int
    tensor_fix: int
    use: str = ""  # what the capture did with it (names.USE_*): a number by value, if empty


class Kernel(NamedTuple):
    """A kernel launched outside any graph (an eager kernel), as CUPTI's kernel activity
    saw it run on the GPU: its start, its GPU time, its stream and its name (demangled,
    without its parameters). Recorded for native programs (``graphdoctor run ./program``),
    the same kernels whose runs in a graph's order are that graph's eager steps."""

    t: int
    dur: int
    stream: int
    name: str
    phase: str = ""


FROZEN_CHANGES_KEPT = 16  # rows written per watched value; later changes are counted only
TENSOR_VALUE = "a tensor"  # how a value that became a tensor is written: never read (a sync)


def tensor_value(dtype: object, device: object) -> str:
    """A :class:`FrozenValue`'s value when the number was moved into a tensor."""
    return f"{TENSOR_VALUE} ({dtype}, {device})"


class KeptOutput(NamedTuple):
    """A captured graph's output (``name``: what the captured block called it) held by the
    script from one replay to the next: by ``holder`` (a list, a dict, an attribute or a
    name, as the source calls it; ``how`` which), ``aliases`` of its entries on the output's
    memory (``addr``, ``size``), which every replay writes again. ``stack``: the line that
    kept it; ``read``: a line that reads it after the next replay, where the source shows
    one. ``replays``: the graph's replays when it was seen."""

    t: int
    graph: int
    name: str
    holder: str
    how: str
    aliases: int
    addr: int
    size: int
    stack: int
    read: int
    replays: int


class UncapturedCall(NamedTuple):
    """A call a native program made while one of its streams captured that CUDA ran at once
    instead of adding it to the graph: a synchronous copy or memset (``cudaMemcpy``), or an
    asynchronous one on the default stream. ``call`` is the driver's name for it, ``stream``
    the stream it named (0: none, or the legacy stream), ``graph`` the capture then open."""

    t: int
    call: str
    stream: int
    graph: int
    thread: int
    stack: int
    phase: str = ""


class CallInput(NamedTuple):
    """A tensor among the inputs of a compiled function's call that raised inside torch
    (CUDA graph trees or Inductor failing while recording): ``position`` among the
    function's arguments (-1: found among the graph's inputs only) and ``name``, its
    ``device``, ``dtype`` and ``shape``, the position of an earlier input on the same
    memory (``alias``, -1 for none), and ``stack``, the script's line that made the call."""

    t: int
    fn: int
    position: int
    name: str
    device: str
    dtype: str
    shape: str
    alias: int
    stack: int


# A row whose GPU time is filled in once its CUDA events have completed.
Timed = Replay | Call


RowT = TypeVar("RowT")


@dataclass(frozen=True)
class _ColumnIndex:
    """Where each value stands in one column of a :class:`Table`, and which column of what
    length that was."""

    column: list[Any]
    length: int
    positions: dict[Any, list[int]]

    @classmethod
    def of(cls, column: list[Any]) -> _ColumnIndex:
        positions: dict[Any, list[int]] = {}
        for position, value in enumerate(column):
            positions.setdefault(value, []).append(position)
        return cls(column, len(column), positions)


class Table(Generic[RowT]):
    """Rows of one event kind stored as columns (one list per field)."""

    __slots__ = ("_indexes", "_make", "columns", "data", "row_type")

    def __init__(self, row_type: type[RowT], data: dict[str, list[Any]] | None = None):
        self.row_type = row_type
        # every row type is a NamedTuple, which a TypeVar bound cannot say
        self._make: Callable[[Iterable[Any]], RowT] = row_type._make  # type: ignore[attr-defined]
        self.columns: tuple[str, ...] = tuple(row_type._fields)  # type: ignore[attr-defined]
        self.data: dict[str, list[Any]] = data or {name: [] for name in self.columns}
        self._indexes: dict[str, _ColumnIndex] = {}

    def append(self, row: Sequence[Any]) -> None:
        for name, value in zip(self.columns, row):
            self.data[name].append(value)

    def __len__(self) -> int:
        return len(self.data[self.columns[0]])

    def __iter__(self) -> Iterator[RowT]:
        make = self._make
        return (make(values) for values in zip(*(self.data[c] for c in self.columns)))

    def __getitem__(self, index: int) -> RowT:
        return self._make(self.data[c][index] for c in self.columns)

    def column(self, name: str) -> list[Any]:
        return self.data[name]

    def rows_where(self, name: str, *values: Any) -> list[RowT]:
        """The rows whose column ``name`` holds one of ``values``, in the table's order."""
        return [self[position] for position in self.positions_where(name, *values)]

    def positions_where(self, name: str, *values: Any) -> list[int]:
        """Where the rows whose column ``name`` holds one of ``values`` stand, in order.
        Asked once per graph or function of a run with a thousand graphs, a scan of every
        row each time took minutes; the column's positions by value are kept and made again
        once the column is another list or has grown."""
        column = self.data[name]
        index = self._indexes.get(name)
        if index is None or index.column is not column or index.length != len(column):
            index = self._indexes[name] = _ColumnIndex.of(column)
        found = [index.positions.get(value, []) for value in dict.fromkeys(values)]
        return list(found[0]) if len(found) == 1 else sorted(p for each in found for p in each)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Table) and self.row_type is other.row_type
                and self.data == other.data)

    __hash__ = None  # type: ignore[assignment]


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
class GuardedTensor:
    """A tensor a failed guard of a recompile names, as it was when torch compiled again:
    ``source`` as torch names it, ``name`` as the user's code does, its position among the
    compiled function's arguments (-1: reached through an attribute or a global), its
    storage as the allocator handed it out (``addr``, ``size`` in bytes), and the stack that
    allocated it. Also a static input CUDA graph trees found moved (``source`` the graph's
    name for it, ``addr`` its new address, no shape)."""

    t: int
    compile_id: str
    source: str
    name: str
    position: int
    shape: str  # "1x8x48x64"
    dtype: str
    addr: int
    size: int
    device: int = 0
    stack: int = NONE  # where its storage was allocated, where the allocator kept that


@dataclass(frozen=True)
class WarningRecord:
    t: int
    category: str
    message: str
    graph: int = NONE
    stack: int = NONE


FREED = "freed"  # an input event's kind: the tensor a graph reads was freed
REBOUND = "rebound"  # its name holds another tensor now, the one captured still alive


@dataclass(frozen=True)
class InputEvent:
    """Something that happened to memory a captured graph reads: freed, or its name
    rebound while it lives on. ``stack`` is where the captured block read it; ``dropped``
    where the name let go of it (the line where the tensor object died, or, rebound, the
    first line after the block that binds the name again), where that is known."""

    t: int
    graph: int
    kind: str  # FREED or REBOUND
    addr: int
    size: int
    stack: int = NONE
    replays: int = 0  # replays of the graph so far when it was noticed
    dropped: int = NONE


@dataclass(frozen=True)
class TeardownEvent:
    """``destroy_process_group`` began or ended; a begin without an end is a teardown hang."""

    t: int
    kind: str  # begin | end
    stack: int = NONE


@dataclass(frozen=True)
class EventKind:
    """One kind of event of a trace."""

    name: str  # the trace's table (columnar) or list attribute that holds it
    label: str  # one event, in words, as every report and screen says it: "synchronization"
    row: type[Any]  # its row type (a NamedTuple for a columnar kind, else a dataclass)
    columnar: bool  # a Table in trace.tables; else a list attribute of Trace
    tag: str = ""  # a columnar kind's spool tag: its rows are its records, read as written
    phased: bool = False  # assembly notes the phase each row fell in (its last field)
    sort: str = ""  # the field naming the sort of event (a sync's kind, a stream op's op)
    plural: str = ""  # the label of more than one, where adding an s is wrong

    def counted(self, count: int) -> str:
        """``1 synchronization``, ``21 synchronizations``, as every report and screen says."""
        return units.counted(count, self.label, self.plural)

    @property
    def fields(self) -> tuple[str, ...]:
        if self.columnar:
            return tuple(self.row._fields)
        return tuple(f.name for f in fields(self.row))

    @property
    def written(self) -> int:
        """How many of a recorded row's fields the recorder writes: all but the phase."""
        return len(self.fields) - (1 if self.phased else 0)

    @property
    def span(self) -> str:
        """The field that holds how long one lasted; empty for a moment."""
        return "dur" if "dur" in self.fields else ""


KINDS: tuple[EventKind, ...] = (
    EventKind("replays", "graph replay", Replay, True, "replay"),
    EventKind("calls", "timed call", Call, True, "call", sort="mode"),
    EventKind("allocs", "allocator action", Alloc, True, "alloc", phased=True, sort="action"),
    EventKind("syncs", "synchronization", Sync, True, "sync", phased=True, sort="kind"),
    EventKind("stream_ops", "stream operation", StreamOp, True, "sop", phased=True, sort="op"),
    EventKind("collectives", "collective", Collective, True, phased=True, sort="op"),
    EventKind("memory", "memory sample", MemorySample, True, "mem", phased=True),
    EventKind("gpu_samples", "GPU sample", GpuSample, True, "nvml"),
    EventKind("instantiations", "graph instantiation", Instantiation, True, "inst",
              phased=True),
    EventKind("gc_pauses", "garbage collection", GcPause, True, "gc", phased=True,
              sort="generation"),
    EventKind("left_running", "process left running", LeftRunning, True, "left", sort="name",
              plural="processes left running"),
    EventKind("frozen_values", "frozen host value", FrozenValue, True, "frozen", sort="seen"),
    EventKind("replay_sites", "replay site", ReplaySite, True, "rsite"),
    EventKind("kept_outputs", "graph output kept across replays", KeptOutput, True, "kept",
              sort="how", plural="graph outputs kept across replays"),
    EventKind("uncaptured_calls", "call left out of a capture", UncapturedCall, True, "uncap",
              phased=True, sort="call", plural="calls left out of a capture"),
    EventKind("call_inputs", "input of a failed compiled call", CallInput, True, "callin",
              sort="device", plural="inputs of a failed compiled call"),
    EventKind("kernels", "eager kernel", Kernel, True, "kern", phased=True, sort="name"),
    EventKind("exceptions", "exception", ExceptionRecord, False),
    EventKind("compile_events", "compile event", CompileEvent, False, sort="kind"),
    EventKind("guarded_tensors", "guarded tensor", GuardedTensor, False),
    EventKind("warnings", "warning", WarningRecord, False, sort="category"),
    EventKind("input_events", "input event", InputEvent, False, sort="kind"),
    EventKind("teardown", "teardown event", TeardownEvent, False, sort="kind"),
)
BY_NAME: dict[str, EventKind] = {kind.name: kind for kind in KINDS}
RECORDED: tuple[EventKind, ...] = tuple(k for k in KINDS if k.tag)  # written to the spool
COLUMNAR: tuple[EventKind, ...] = tuple(k for k in KINDS if k.columnar)
LISTED: tuple[EventKind, ...] = tuple(k for k in KINDS if not k.columnar)
TABLE_ROWS: dict[str, type[Any]] = {kind.name: kind.row for kind in COLUMNAR}


class Rows(Protocol):
    """What a kind's events are read through: a Table or a list."""

    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[Any]: ...
    def __getitem__(self, index: int, /) -> Any: ...


def rows_of(trace: Any, kind: EventKind) -> Rows:
    """A trace's events of one kind: its table, or its list."""
    rows: Rows = trace.tables[kind.name] if kind.columnar else getattr(trace, kind.name)
    return rows


def empty_tables() -> dict[str, Table[Any]]:
    return {kind.name: Table(kind.row) for kind in COLUMNAR}
