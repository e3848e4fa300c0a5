"""The spool's vocabulary: one typed record per tag, declared once for writer and reader.

On disk a record is a JSON array, its tag first and then its fields in the order declared
(``["sync", t, kind, stream, graph, thread, stack]``); positional, because the child writes
millions of them. In memory, on both sides, it is a NamedTuple, read by field name: those
below, and the rows of the kinds of event the recorder writes as they are, declared with
their kind in :mod:`graphdoctor.trace.event_kinds` (their tags join the ones here). A field
added later goes at the end with a default, so an older spool (which lacks it) still
decodes; fields past the declared ones (written by a newer graphdoctor) are dropped. A
record with too few fields, or one whose tag is not declared, is drift: decoding raises
:class:`SpoolDrift`, which assembly counts and names in the report; one whose values are not
of the declared types (:mod:`graphdoctor.trace.spool.typed`) raises ValueError, and assembly
counts it among the records it could not read, when the spool may be a stranger's.

Nothing here imports torch: the recorder builds these records, assembly reads them.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from graphdoctor.trace.event_kinds import RECORDED

JsonObject = dict[str, Any]


class SpoolDrift(ValueError):
    """A spool line that does not match the declared record of its tag."""


# -- the run and its process ---------------------------------------------------------------
class Hello(NamedTuple):
    """First record of a child: version, pid, argv, target, target_kind, cwd, mode,
    started_at."""

    info: JsonObject


class MetaInfo(NamedTuple):
    """Facts about the environment (python, torch, cuda, platform, hostname, env...)."""

    info: JsonObject


class Devices(NamedTuple):
    """NVML facts per visible device: index, name, memory_total, compute_capability..."""

    devices: list[JsonObject]


class NoteRecord(NamedTuple):
    """Something that was not recorded, and why."""

    what: str
    why: str


class CudaState(NamedTuple):
    """Whether CUDA was built, available and initialized when the recording stopped."""

    info: JsonObject


class End(NamedTuple):
    """The child's own end: exit_code, interrupted."""

    info: JsonObject


class RunEnd(NamedTuple):
    """Appended by the parent once the child is gone: exit_code, signal, reason, wall_ns,
    stacks_at_end, message; passed_on, the signal a script killed after it went on; and
    spool_error, why the spool could not be written to its end, where it could not."""

    info: JsonObject


# -- code: frames, stacks, followed functions --------------------------------------------------
class FrameRecord(NamedTuple):
    id: int
    file: str
    line: int
    name: str
    kind: str


class SourceDigest(NamedTuple):
    """A source file the recording's stacks name, as it was when the run ended: its size and
    SHA-256. Appended by whoever finishes the spool (the parent, or the in-process API); a
    reader shows a line of it only from a file that still has this digest."""

    file: str
    size: int
    sha256: str


class StackRecord(NamedTuple):
    id: int
    frames: list[int]


class FunctionRecord(NamedTuple):
    id: int
    name: str
    kind: str
    file: str
    line: int
    compile_id: str


# -- graphs -----------------------------------------------------------------------------------
class GraphBegin(NamedTuple):
    """A capture began: id, t, api, internal, stream, shared_pool, pool, capture_error_mode,
    stack, function, key, device."""

    info: JsonObject


class GraphEnd(NamedTuple):
    """A capture ended: id, t, status, pool, pool_bytes, error, callees, own (graphdoctor's
    own spans inside the capture)."""

    info: JsonObject


class GraphDeleted(NamedTuple):
    graph: int
    t: int


class GraphStep(NamedTuple):
    """Function ``fn`` (a user function, timed before the graph existed) replays ``graph``."""

    graph: int
    fn: int


class GraphAnatomy(NamedTuple):
    """What ``graph`` held when its capture ended, read from the driver (the JSON form of
    :class:`graphdoctor.trace.anatomy.Anatomy`)."""

    graph: int
    t: int
    info: JsonObject


class KernelTimes(NamedTuple):
    """GPU time of ``graph``'s kernels in one replay, profiled (``--full``): nanoseconds per
    kernel group name, and the replay's kernels in all."""

    graph: int
    t: int
    times: dict[str, int]
    total: int


class Progress(NamedTuple):
    """Replays per graph so far ({"replays": {graph: count}}), written twice a second."""

    t: int
    counts: JsonObject


class ReplayRun(NamedTuple):
    """Replays of one graph on one thread whose GPU time was not taken, written together:
    the first at ``t``, each next one ``gaps[i]`` ns after the one before (``gaps[0]`` is 0),
    each lasting ``durs[i]`` ns on the host; ``stream``: the stream of the graph's last
    timed replay. At most :data:`REPLAY_RUN_MAX` of them."""

    graph: int
    thread: int
    stream: int
    t: int
    gaps: list[int]
    durs: list[int]


REPLAY_RUN_MAX = 4096  # replays one ReplayRun holds at most; a longer one is not ours


class CallRun(NamedTuple):
    """Calls of one compiled function on one thread, each a replay of its graph, whose GPU
    time was not taken, written together as :class:`ReplayRun` writes replays: the first at
    ``t``, each next one ``gaps[i]`` ns after the one before, each ``durs[i]`` ns long on
    the host. At most :data:`REPLAY_RUN_MAX` of them."""

    fn: int
    thread: int
    t: int
    gaps: list[int]
    durs: list[int]


class ReplaySpan(NamedTuple):
    """GPU time from the end of one timed replay of ``graph`` to the end of its next timed
    one on the same stream (``gpu`` ns), the replays between them included; ``t_from`` and
    ``t_to``: the two timed replays' host starts, by which the replays between are found."""

    graph: int
    t_from: int
    t_to: int
    gpu: int


class Region(NamedTuple):
    """A span of the run where graphs are made on the user's behalf (make_graphed_callables)."""

    name: str
    t0: int
    t1: int


class Untimed(NamedTuple):
    """How many replays and calls had no GPU time taken (during a capture, or too many)."""

    calls: int


class InputRecord(NamedTuple):
    t: int
    graph: int
    kind: str
    addr: int
    size: int
    stack: int  # where the captured block read it
    replays: int
    dropped: int = -1  # where the tensor object holding it died (the name rebound), if seen


# -- memory, syncs, streams ------------------------------------------------------------------


# -- errors, warnings, torch.compile ---------------------------------------------------------
class ExceptionInfo(NamedTuple):
    """An exception: id, t, where, graph, thread, chain ([type, message, cuda_error, stack])."""

    info: JsonObject


class WarnRecord(NamedTuple):
    t: int
    category: str
    message: str
    graph: int
    stack: int


class LogRecord(NamedTuple):
    """A torch.compile log line (its text is parsed at assembly)."""

    t: int
    logger: str
    level: str
    message: str
    compile_id: str
    stack: int


class GuardFailures(NamedTuple):
    """Why torch.compile compiled a function again: torch's own reasons, one per earlier
    compile whose guards failed (the text its ``recompiles`` log prints), the function it
    compiled (name, file, first line), and the stack of the call that set it off."""

    t: int
    compile_id: str
    function: str
    file: str
    line: int
    reasons: list[str]
    stack: int


class GuardedTensor(NamedTuple):
    """A tensor a failed guard names, as the recorder found it when torch compiled again: the
    guard's source (torch's name for it), its position among the compiled function's
    arguments (-1 for one reached through an attribute or a global), its shape and dtype,
    its storage (address and bytes, as the caching allocator handed it out), and where that
    was allocated. Also a static input CUDA graph trees found moved: the graph's name for
    it and its new address (shape, dtype and size unknown: empty, "" and 0)."""

    t: int
    compile_id: str
    source: str
    position: int
    shape: list[int]
    dtype: str
    addr: int
    size: int
    device: int
    stack: int = -1  # the stack the allocator kept for its block, where it kept one
    name: str = ""  # a moved input's name as the compiled module calls it, where found


class CompileCallback(NamedTuple):
    """torch._dynamo's compile start/end callback: kind is compile_start or compile_end."""

    t: int
    kind: str
    trigger: str
    compile_id: str
    stack: int


class Counters(NamedTuple):
    """torch._dynamo's counters at the end of the run."""

    counters: dict[str, dict[str, int]]


class TreeInputs(NamedTuple):
    """Inputs a cudagraph-tree function copies into its graph on each replay."""

    t: int
    fn: int
    compile_id: str
    inputs: int
    size: int


# -- torch.distributed -----------------------------------------------------------------------
class CollectiveRecord(NamedTuple):
    token: int
    t: int
    op: str
    group: str
    seq: int
    size: int
    is_async: bool
    graph: int
    thread: int
    stack: int


class CollectiveEnd(NamedTuple):
    token: int
    t: int


class DistInfo(NamedTuple):
    """The process group: backend, rank, world_size."""

    info: JsonObject


class TeardownRecord(NamedTuple):
    t: int
    kind: str
    stack: int


# A row of a kind of event the recorder writes as it is (event_kinds.RECORDED): a NamedTuple
# declared with its kind, so no union here names each one.
EventRecord = tuple[Any, ...]
SpoolRecord = (Hello | MetaInfo | Devices | NoteRecord | CudaState | End | RunEnd | FrameRecord
               | SourceDigest | StackRecord | FunctionRecord | GraphBegin | GraphEnd
               | GraphDeleted | GraphStep | GraphAnatomy | KernelTimes | Progress | ReplayRun
               | CallRun
               | ReplaySpan
               | Region
               | Untimed | InputRecord | ExceptionInfo | WarnRecord | LogRecord | GuardFailures
               | GuardedTensor | CompileCallback | Counters | TreeInputs | CollectiveRecord
               | CollectiveEnd | DistInfo | TeardownRecord | EventRecord)

TAGS: dict[type[tuple[Any, ...]], str] = {
    Hello: "hello", MetaInfo: "meta", Devices: "devices", NoteRecord: "note",
    CudaState: "cuda_state", End: "end", RunEnd: "run_end",
    FrameRecord: "frame", SourceDigest: "source", StackRecord: "stack",
    FunctionRecord: "fn",
    GraphBegin: "graph", GraphEnd: "graph_end", GraphDeleted: "graph_del",
    GraphStep: "graph_step", GraphAnatomy: "anatomy", KernelTimes: "kernel_times",
    Progress: "progress", ReplayRun: "replay_run", ReplaySpan: "replay_span", Region: "region",
    CallRun: "call_run",
    Untimed: "untimed",
    InputRecord: "input",
    ExceptionInfo: "exc", WarnRecord: "warn", LogRecord: "log", GuardFailures: "guards",
    GuardedTensor: "guarded",
    CompileCallback: "compile_cb", Counters: "counters", TreeInputs: "tree_inputs",
    CollectiveRecord: "coll", CollectiveEnd: "coll_end", DistInfo: "dist",
    TeardownRecord: "teardown",
    **{kind.row: kind.tag for kind in RECORDED},
}
# How many fields of an event's row the recorder writes (assembly fills the rest): decoding
# reads no more, so a field a newer recorder writes after them never lands in their place.
WRITTEN: dict[type[tuple[Any, ...]], int] = {kind.row: kind.written for kind in RECORDED}
RECORDS: dict[str, type[tuple[Any, ...]]] = {tag: cls for cls, tag in TAGS.items()}

# Records the writer appends to the spool at once, with every record written before them (the
# stacks and frames they name): they are what a post-mortem needs most, and a script that
# dies in native code just after one (a segfault in a replay, after "skipping cudagraphs")
# must leave it in the spool. Few in number, so the hot path (allocations, syncs, calls)
# stays batched; batched records wait in the spool's tail, which a crash does not lose.
URGENT = frozenset({Hello, MetaInfo, Devices, NoteRecord, CudaState, End, RunEnd, GraphBegin,
                    GraphEnd, ExceptionInfo, WarnRecord, LogRecord, GuardFailures, GuardedTensor,
                    CompileCallback, Counters, DistInfo, TeardownRecord})


def encode(record: SpoolRecord) -> list[Any]:
    """The JSON array a record is written as: its tag, then its fields in order (an event's,
    but those assembly fills)."""
    written = WRITTEN.get(type(record))
    return [TAGS[type(record)], *(record if written is None else record[:written])]


def decode(raw: list[Any]) -> SpoolRecord:
    """The typed record of a spool line; :class:`SpoolDrift` when it matches none."""
    cls = RECORDS.get(raw[0])
    if cls is None:
        raise SpoolDrift(f"no record is declared for tag {raw[0]!r}")
    fields: tuple[str, ...] = cls._fields  # type: ignore[attr-defined]  # every NamedTuple
    required = len(fields) - len(cls._field_defaults)  # type: ignore[attr-defined]
    values = raw[1:1 + WRITTEN.get(cls, len(fields))]
    if len(values) < required:
        raise SpoolDrift(f"{raw[0]!r} has {len(values)} fields, {required} are declared")
    record: SpoolRecord = cls(*values)
    return record
