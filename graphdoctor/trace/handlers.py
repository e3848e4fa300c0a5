"""What each spool record does to the trace being assembled: one small handler per record.

The records of the columnar event kinds need no handler of their own: a record is its row
(:func:`_columnar`), as :data:`event_kinds.KINDS` declares.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from graphdoctor.trace.builder import Builder
from graphdoctor.trace.event_kinds import RECORDED, Call, EventKind, Replay
from graphdoctor.trace.model import (
    NONE,
    Collective,
    CompileEvent,
    ErrorLink,
    ExceptionRecord,
    Frame,
    Function,
    GuardedTensor,
    InputEvent,
    Note,
    SourceFile,
    TeardownEvent,
    WarningRecord,
)
from graphdoctor.trace.names import COMPILE, COMPILE_START, RECOMPILE, REPLAYING_CALL
from graphdoctor.trace.spool import records as sr
from graphdoctor.trace.spool.typed import number
from graphdoctor.trace.torch_logs import compile_logs, guards

Handler = Callable[[Builder, Any], None]


def _meta(b: Builder, r: sr.Hello | sr.MetaInfo) -> None:
    b.meta.update(r.info)


def _devices(b: Builder, r: sr.Devices) -> None:
    b.meta["devices"] = r.devices


def _note(b: Builder, r: sr.NoteRecord) -> None:
    b.notes.append(Note(str(r.what), str(r.why)))


def _frame(b: Builder, r: sr.FrameRecord) -> None:
    b.frames[_number(r.id)] = Frame(r.file, int(r.line), r.name, r.kind)


def _source(b: Builder, r: sr.SourceDigest) -> None:
    if int(r.size) < 0:
        raise ValueError("a file of negative size")
    b.sources[str(r.file)] = SourceFile(str(r.file), int(r.size), str(r.sha256))


def _stack(b: Builder, r: sr.StackRecord) -> None:
    b.stacks[_number(r.id)] = tuple(map(_number, r.frames))


def _number(value: object) -> int:
    """A number as the recorder writes it: an int; ValueError (a bad record) for anything
    else."""
    if type(value) is not int:
        raise ValueError(f"not a number: {value!r}")
    return value


def _text(value: object) -> str:
    if type(value) is not str:
        raise ValueError(f"not text: {value!r}")
    return value


def _fn(b: Builder, r: sr.FunctionRecord) -> None:
    b.trace.functions.append(Function(r.id, r.name, r.kind, r.file, int(r.line), r.compile_id))


def _graph_begin(b: Builder, r: sr.GraphBegin) -> None:
    b.graphs[_number(r.info["id"])] = dict(r.info)
    b.see(_number(r.info["t"]))


def _graph_end(b: Builder, r: sr.GraphEnd) -> None:
    graph_id, t = _number(r.info["id"]), _number(r.info["t"])
    b.graphs.setdefault(graph_id, {"id": graph_id, "t": t})["end"] = r.info
    b.see(t)


def _graph_del(b: Builder, r: sr.GraphDeleted) -> None:
    if r.graph in b.graphs:
        b.graphs[r.graph]["deleted"] = r.t


def _graph_step(b: Builder, r: sr.GraphStep) -> None:
    if r.graph in b.graphs:
        b.graphs[r.graph]["step"] = r.fn


def _graph_anatomy(b: Builder, r: sr.GraphAnatomy) -> None:
    if r.graph in b.graphs:
        b.graphs[r.graph]["anatomy"] = dict(r.info)


def _kernel_times(b: Builder, r: sr.KernelTimes) -> None:
    if r.graph in b.graphs:
        b.graphs[r.graph]["kernel_times"] = (dict(r.times), int(r.total))


def _columnar(kind: EventKind) -> Handler:
    """Append a row of ``kind``: its record as written (the phase comes later)."""
    table, spans = kind.name, bool(kind.span)

    def handle(b: Builder, r: tuple[Any, ...]) -> None:
        b.trace.tables[table].append(r)
        b.see(r[0] + (r[1] if spans else 0))

    return handle


def _tree_inputs(b: Builder, r: sr.TreeInputs) -> None:
    functions = b.trace.functions
    for i, function in enumerate(functions):
        if function.id == r.fn and r.size >= function.copied_bytes:
            functions[i] = dataclasses.replace(function, copied_inputs=int(r.inputs),
                                               copied_bytes=int(r.size))
    b.see(r.t)


def _coll(b: Builder, r: sr.CollectiveRecord) -> None:
    b.open_collectives[r.token] = len(b.trace.tables["collectives"])
    b.trace.tables["collectives"].append(Collective(r.t, NONE, r.op, r.group, r.seq, r.size,
                                                    r.graph, r.thread, r.stack))
    b.see(r.t)


def _coll_end(b: Builder, r: sr.CollectiveEnd) -> None:
    index = b.open_collectives.pop(r.token, None)
    if index is not None:
        durations = b.trace.tables["collectives"].data["dur"]
        durations[index] = r.t - b.trace.tables["collectives"].data["t"][index]
    b.see(r.t)


def _dist(b: Builder, r: sr.DistInfo) -> None:
    b.meta.update({k: v for k, v in r.info.items() if k in ("backend", "rank", "world_size")})


def _teardown(b: Builder, r: sr.TeardownRecord) -> None:
    b.trace.teardown.append(TeardownEvent(b.see(r.t), r.kind, _ref(r.stack)))


def _input(b: Builder, r: sr.InputRecord) -> None:
    b.trace.input_events.append(InputEvent(b.see(r.t), r.graph, r.kind, r.addr, r.size,
                                           _ref(r.stack), r.replays, _ref(r.dropped)))


def _ref(value: object) -> int:
    """An id that names a stack, a graph or a function, as a spool gives it: NONE for none,
    and for anything no recorder writes (below NONE, not an int: a stranger's spool)."""
    return value if type(value) is int and value >= NONE else NONE


def _exc(b: Builder, r: sr.ExceptionInfo) -> None:
    e = r.info
    chain = tuple(ErrorLink(str(c[0]), str(c[1]), str(c[2]), _ref(_number(c[3])))
                  for c in e["chain"])
    b.trace.exceptions.append(ExceptionRecord(
        _number(e["id"]), b.see(_number(e["t"])), _text(e["where"]),
        _ref(number(e, "graph", NONE)), number(e, "thread", 0), chain))


def _log(b: Builder, r: sr.LogRecord) -> None:
    parsed = compile_logs.parse(r.logger, r.message)
    if parsed is None:
        return
    frames = parsed.pop("frames", None)
    event = CompileEvent(r.t, parsed["kind"], parsed.get("compile_id") or r.compile_id,
                         parsed.get("function", ""), parsed.get("reason", ""),
                         parsed.get("detail", ""), parsed.get("key", ""),
                         b.text_stack(frames) if frames else _ref(r.stack))
    b.trace.compile_events.append(event)
    b.see(r.t)


def _guard_failures(b: Builder, r: sr.GuardFailures) -> None:
    """A recompile as the recorder saw it: the same event as its log line (which it
    replaces, when the script turned that log on), with the call that set it off."""
    parsed = compile_logs.recompile(r.function, r.file, int(r.line), list(r.reasons))
    frames = b.frames_of(r.stack) + parsed["frames"]
    event = CompileEvent(r.t, RECOMPILE, r.compile_id, parsed["function"], parsed["reason"],
                         parsed["detail"], parsed["key"], b.text_stack(frames))
    b.trace.compile_events = [e for e in b.trace.compile_events if not (
        e.kind == RECOMPILE and r.compile_id and e.compile_id == r.compile_id)]
    b.trace.compile_events.append(event)
    b.see(r.t)


def _guarded_tensor(b: Builder, r: sr.GuardedTensor) -> None:
    shape = "x".join(str(int(n)) for n in r.shape)
    b.trace.guarded_tensors.append(GuardedTensor(
        b.see(r.t), r.compile_id, r.source, r.name or guards.user_name(r.source),
        int(r.position), shape, r.dtype, int(r.addr), int(r.size), int(r.device),
        _ref(int(r.stack))))


def _compile_cb(b: Builder, r: sr.CompileCallback) -> None:
    key = f"{r.compile_id}:{r.trigger}"
    if r.kind == COMPILE_START:
        b.compile_spans[key] = (r.t, r.trigger, _ref(r.stack))
        return
    start = b.compile_spans.pop(key, None)
    if start is not None:
        b.trace.compile_events.append(CompileEvent(start[0], COMPILE, r.compile_id,
                                                   reason=r.trigger, stack=start[2],
                                                   dur=r.t - start[0]))
    b.see(r.t)


def _warn(b: Builder, r: sr.WarnRecord) -> None:
    b.trace.warnings.append(WarningRecord(b.see(r.t), r.category, r.message, _ref(r.graph),
                                          _ref(r.stack)))


def _region(b: Builder, r: sr.Region) -> None:
    b.regions.append((r.name, r.t0, r.t1))
    b.see(r.t1)


def _counters(b: Builder, r: sr.Counters) -> None:
    b.trace.counters = r.counters


def _progress(b: Builder, r: sr.Progress) -> None:
    replays = r.counts.get("replays", {})
    b.trace.replay_counts = {int(k): _number(v) for k, v in replays.items()}
    b.see(r.t)


def _replay_run(b: Builder, r: sr.ReplayRun) -> None:
    """Each replay of the run as a row of its own, untimed on the GPU (as the recorder's
    untimed rows are)."""
    graph, thread, stream = int(r.graph), int(r.thread), int(r.stream)
    _run_rows(b, "replays", r, lambda t, dur: Replay(t, dur, NONE, graph, stream, thread))


def _call_run(b: Builder, r: sr.CallRun) -> None:
    """Each call of the run as a row of its own: a compiled function's call that replayed
    its graph, untimed on the GPU."""
    fn = int(r.fn)
    _run_rows(b, "calls", r, lambda t, dur: Call(t, dur, NONE, fn, REPLAYING_CALL, NONE))


def _run_rows(b: Builder, table: str, r: sr.ReplayRun | sr.CallRun,
              row: Callable[[int, int], Any]) -> None:
    """A run's rows in ``table``, each its gap after the one before; a run that is not one
    the recorder writes (gaps and durations unpaired, too many, negative) is a bad record."""
    gaps, durs = [int(g) for g in r.gaps], [int(d) for d in r.durs]
    if len(gaps) != len(durs) or len(gaps) > sr.REPLAY_RUN_MAX or min(gaps + durs, default=0) < 0:
        raise ValueError(f"not a run of {table}")
    t, rows = int(r.t), b.trace.tables[table]
    for gap, dur in zip(gaps, durs):
        t += gap
        rows.append(row(t, dur))
    if durs:
        b.see(t + durs[-1])


SPANS_KEPT = 1024  # spans between timed replays kept per graph


def _replay_span(b: Builder, r: sr.ReplaySpan) -> None:
    """Kept with its graph, the first :data:`SPANS_KEPT` of them (a sample is enough); one
    that runs backwards or has no graph is a bad record."""
    t_from, t_to, gpu = int(r.t_from), int(r.t_to), int(r.gpu)
    if t_to <= t_from or gpu < 0 or r.graph not in b.graphs:
        raise ValueError("not a span between replays")
    spans = b.graphs[r.graph].setdefault("spans", [])
    if len(spans) < SPANS_KEPT:
        spans.append((t_from, t_to, gpu))


def _untimed(b: Builder, r: sr.Untimed) -> None:
    b.untimed += int(r.calls)


def _cuda_state(b: Builder, r: sr.CudaState) -> None:
    b.cuda = r.info


def _end(b: Builder, r: sr.End) -> None:
    b.end = r.info


def _run_end(b: Builder, r: sr.RunEnd) -> None:
    b.run_end = r.info


HANDLERS: dict[type[tuple[Any, ...]], Handler] = {
    sr.Hello: _meta, sr.MetaInfo: _meta, sr.Devices: _devices, sr.NoteRecord: _note,
    sr.FrameRecord: _frame, sr.SourceDigest: _source, sr.StackRecord: _stack,
    sr.FunctionRecord: _fn,
    sr.GraphBegin: _graph_begin, sr.GraphEnd: _graph_end, sr.GraphDeleted: _graph_del,
    sr.GraphStep: _graph_step, sr.GraphAnatomy: _graph_anatomy, sr.KernelTimes: _kernel_times,
    sr.ExceptionInfo: _exc, sr.LogRecord: _log, sr.GuardFailures: _guard_failures,
    sr.GuardedTensor: _guarded_tensor,
    sr.CompileCallback: _compile_cb,
    sr.WarnRecord: _warn, sr.Region: _region, sr.Counters: _counters, sr.Untimed: _untimed,
    sr.Progress: _progress, sr.ReplayRun: _replay_run, sr.ReplaySpan: _replay_span,
    sr.CallRun: _call_run,
    sr.InputRecord: _input,
    sr.CollectiveRecord: _coll,
    sr.CollectiveEnd: _coll_end, sr.DistInfo: _dist, sr.TeardownRecord: _teardown,
    sr.TreeInputs: _tree_inputs, sr.CudaState: _cuda_state, sr.End: _end,
    sr.RunEnd: _run_end,
    **{kind.row: _columnar(kind) for kind in RECORDED},
}
