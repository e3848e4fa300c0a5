"""The report as a Chrome trace (JSON Trace Event Format) for Perfetto and chrome://tracing.

Lanes (one pid per process row, one tid per lane, each named with ``M`` metadata):

- pid 1 "host": ``phases`` (warmup, capture, replay, eager spans), ``graph captures``,
  one lane per Python thread (timed calls and ``replay()`` calls as slices; syncs,
  exceptions and warnings as instants), ``torch.compile`` (compile spans and instants for
  graph breaks, recompiles, skips), ``inputs`` (captured inputs freed or rebound);
  memory counters (allocated and reserved bytes, and live bytes per pool).
- pid 10+N "GPU N": one lane per CUDA stream: each replay's GPU time as a slice, started
  at its launch or when the stream's previous replay ends (the recording has the GPU
  duration, not the GPU start), with flow arrows from the host call to it and to its first
  node; its graph's nodes, where estimated to run, on lanes beside the stream's; the eager
  kernels a native program ran; stream and event operations as instants; NVML counters
  (:mod:`.chrome_gpu` draws what ran on the GPU).

A distributed run's report exports every rank: rank N's host lanes go to pid 100N+1
("rank N host"), its GPUs' to pid 100N+10+device ("rank N GPU d"), so a single-process
export keeps pids 1 and 10+N. The torch.distributed calls are slices on their thread's lane
(one that never returned runs to the end of the recording, with a note saying so), and so is
``destroy_process_group()``. NVML reads every GPU of the host, so a rank's counters keep only
the GPUs it used. The ranks share one time axis, set by each rank's wall clock at its start
and, across hosts, by the barriers they left together (:mod:`graphdoctor.facts.job_clock`;
``otherData.clocks`` says how).

Perfetto needs the slices of a lane to nest, with no partial overlap: slices that would
overlap spill into a numbered extra lane (``thread 0 (2)``). Times are microseconds with
nanosecond decimals, from the start of the run.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections import defaultdict
from collections.abc import Collection, Iterator
from typing import Any

from graphdoctor.clean_text import clean
from graphdoctor.facts import locations, tallies
from graphdoctor.facts.job_clock import JobClock
from graphdoctor.report import rank_groups
from graphdoctor.report.document import Report
from graphdoctor.report.render.chrome_gpu import (
    Plans,
    eager_kernels,
    node_note,
    replays_on_gpu,
    slice_event,
    us,
)
from graphdoctor.report.render.drawn_kinds import drawn_from_the_registry
from graphdoctor.trace.event_kinds import EventKind, rows_of
from graphdoctor.trace.model import NONE, Trace
from graphdoctor.trace.names import ALLOC_ACTION

HOST_PID = 1
GPU_PID = 10
RANK_PIDS = 100  # rank N's processes are numbered from 100 * N
NEVER_RETURNED = "never returned: drawn to the end of the recording"
Event = dict[str, Any]


class _Lanes:
    """Hands out one tid per named lane and remembers the names for the metadata."""

    def __init__(self) -> None:
        self.tids: dict[tuple[int, str], int] = {}
        self.processes: dict[int, str] = {}

    def tid(self, pid: int, name: str) -> int:
        key = (pid, name)
        if key not in self.tids:
            self.tids[key] = len(self.tids) + 1
        return self.tids[key]

    def metadata(self) -> list[Event]:
        events: list[Event] = []
        for pid, name in sorted(self.processes.items()):
            events += [{"ph": "M", "pid": pid, "tid": 0, "name": "process_name",
                        "args": {"name": name}},
                       {"ph": "M", "pid": pid, "tid": 0, "name": "process_sort_index",
                        "args": {"sort_index": pid}}]
        for (pid, name), tid in self.tids.items():
            events += [{"ph": "M", "pid": pid, "tid": tid, "name": "thread_name",
                        "args": {"name": name}},
                       {"ph": "M", "pid": pid, "tid": tid, "name": "thread_sort_index",
                        "args": {"sort_index": tid}}]
        return events


class _Window:
    """Which moments to export: all, or those inside spans of the chosen phases."""

    def __init__(self, trace: Trace, phases: Collection[str]):
        spans = sorted((s.start, s.end) for s in trace.phases if s.phase in phases)
        self.starts = [start for start, _ in spans]
        self.ends = [end for _, end in spans]
        self.everything = not phases

    def __call__(self, t: int, dur: int = 0) -> bool:
        """Whether [t, t + dur] meets a chosen span. Spans do not overlap, so only the last
        one starting before the moment ends can meet it."""
        if self.everything:
            return True
        index = bisect.bisect_right(self.starts, t + dur) - 1
        return index >= 0 and self.ends[index] > t


class _Export:
    """What every part of the export of one trace shares: the trace, its rank (-1 in a
    single-process report) and process rows, the lanes, the window, and the call sites of
    stacks (many events share a few stacks)."""

    def __init__(self, trace: Trace, phases: Collection[str], lanes: _Lanes,
                 rank: int = NONE, flow_base: int = 0):
        self.trace, self.lanes, self.rank = trace, lanes, rank
        self.keep = _Window(trace, phases)
        self._sites: dict[int, str] = {}
        self.functions = {f.id: f.name for f in trace.functions}
        self.host_pid = RANK_PIDS * max(rank, 0) + HOST_PID
        self.prefix = f"rank {rank} " if rank != NONE else ""
        self.flow_base = flow_base  # flow ids stay unique across ranks
        # Events that name no device ran on the rank's own GPU; a single process keeps GPU 0.
        self.device = tallies.main_device(trace) if rank != NONE else 0
        self.sampled = tallies.used_devices(trace) if rank != NONE else []
        self.end = max([trace.status.wall_ns] + [span.end for span in trace.phases[-1:]])
        self.plans = Plans(trace)  # each graph's nodes, placed once for all its replays

    def thread_lane(self, thread: int) -> int:
        return self.lanes.tid(self.host_pid, f"thread {thread}")

    def gpu_pid(self, device: int) -> int:
        """The process row of a GPU (of this rank), named the first time it is used."""
        pid = self.host_pid - HOST_PID + GPU_PID + max(0, device)
        if pid not in self.lanes.processes:
            names = {d.index: d.name for d in self.trace.meta.devices}
            self.lanes.processes[pid] = clean(
                f"{self.prefix}GPU {device}: {names.get(device, '?')}")
        return pid

    def stream_lane(self, stream: int, device: int, suffix: str = "") -> tuple[int, int]:
        """A stream's track on its GPU's row; ``suffix`` names one beside it (its nodes)."""
        pid = self.gpu_pid(device)
        label = f"stream {stream}" + (" (default)" if stream == 0 else "") + suffix
        return pid, self.lanes.tid(pid, label)

    def site(self, stack: int) -> str:
        if stack not in self._sites:
            self._sites[stack] = locations.site(self.trace, stack)
        return self._sites[stack]


def to_chrome_trace(report: Report, phases: Collection[str] = ()) -> dict[str, Any]:
    """The report as a Trace Event Format object, every rank of it; ``phases`` keeps only
    those phases' moments."""
    lanes = _Lanes()
    events: list[Event] = []
    flow_base = 0
    clock = rank_groups.clock_of(report)
    plans = []
    for rank in report.ranks or [NONE]:
        trace = report.trace_of(rank)
        export = _Export(trace, phases, lanes, rank, flow_base)
        lanes.processes[export.host_pid] = clean(
            f"{export.prefix}host: {trace.meta.target or 'script'}")
        events += _shifted(_rank_events(export), clock.offset(rank))
        flow_base += len(trace.tables["replays"])
        plans.append(export.plans)
    events = _nest(events, lanes)
    other = {**_other_data(report, phases, clock), "graph_nodes": node_note(plans)}
    return {"traceEvents": lanes.metadata() + events, "displayTimeUnit": "ms",
            "otherData": other}


def _rank_events(export: _Export) -> list[Event]:
    events: list[Event] = []
    for part in (_phases, _captures, _threads, _collectives, _teardown, _thread_instants,
                 _compile, _inputs, _memory, _streams, _eager_kernels, _gpu):
        events += part(export)
    # The kinds the parts above draw in their own way are drawn_kinds.DRAWN_APART; any
    # other kind gets a lane of its own, so a new kind is in the export without a change.
    for kind in drawn_from_the_registry():
        events += _kind_lane(export, kind)
    return events


def _shifted(events: list[Event], offset: int) -> list[Event]:
    """A rank's events moved onto the job's time axis."""
    if offset:
        for event in events:
            event["ts"] = us(event["_t"] + offset) if "_t" in event else event["ts"] + us(offset)
            for key in ("_t", "_end"):
                if key in event:
                    event[key] += offset
    return events


def _other_data(report: Report, phases: Collection[str], clock: JobClock) -> dict[str, Any]:
    meta = report.trace.meta
    data: dict[str, str | int] = {
        "generator": f"graphdoctor {report.tool_version}",
        "report_schema": report.schema_version, "target": clean(meta.target),
        "started_at": meta.started_at, "torch": meta.torch, "cuda": meta.cuda,
        "devices": ", ".join(d.name for d in meta.devices),
        "phases": ", ".join(phases) if phases else "all"}
    if report.ranks:
        data.update(ranks=", ".join(map(str, report.ranks)), world_size=meta.world_size,
                    backend=clean(meta.backend), clocks=clean("; ".join(clock.how)))
    return data


def _instant(pid: int, tid: int, name: str, t: int, cat: str, /, **args: Any) -> Event:
    return {"ph": "i", "s": "t", "pid": pid, "tid": tid, "name": name, "cat": cat,
            "ts": us(t), "args": args}


def _counter(pid: int, name: str, t: int, /, **values: int) -> Event:
    return {"ph": "C", "pid": pid, "tid": 0, "name": name, "ts": us(t), "args": values}


def _phases(x: _Export) -> Iterator[Event]:
    tid = x.lanes.tid(x.host_pid, "phases")
    for span in x.trace.phases:
        if x.keep(span.start, span.end - span.start):
            name = span.phase + (f" (graph {span.graph})" if span.graph >= 0 else "")
            yield slice_event(x.host_pid, tid, clean(name), span.start, span.end - span.start,
                         "phase", phase=span.phase, graph=span.graph)


def _captures(x: _Export) -> Iterator[Event]:
    tid = x.lanes.tid(x.host_pid, "graph captures")
    for g in x.trace.graphs:
        end = g.capture_end if g.capture_end >= g.capture_start else x.trace.status.wall_ns
        if x.keep(g.capture_start, end - g.capture_start):
            yield slice_event(x.host_pid, tid, clean(f"capture graph {g.id} ({g.status})"),
                         g.capture_start, end - g.capture_start, "capture", graph=g.id,
                         api=g.api, status=g.status, pool=g.pool, internal=g.internal,
                         site=x.site(g.stack))


def _threads(x: _Export) -> Iterator[Event]:
    calls = _columns(x.trace, "calls", "t", "dur", "gpu", "fn", "mode", "graph")
    for t, dur, gpu, fn, mode, graph in calls:
        if x.keep(t, dur):
            name = clean(f"{x.functions.get(fn, f'function {fn}')} [{mode}]")
            yield slice_event(x.host_pid, x.thread_lane(0), name, t, dur, "call", gpu_ns=gpu,
                         graph=graph, mode=mode)
    replays = _columns(x.trace, "replays", "t", "dur", "gpu", "graph", "thread")
    for index, (t, dur, gpu, graph, thread) in enumerate(replays):
        if x.keep(t, dur):
            event = slice_event(x.host_pid, x.thread_lane(thread), f"replay graph {graph}", t,
                           dur, "replay", graph=graph, gpu_ns=gpu)
            if gpu >= 0:
                event["_flow"] = x.flow_base + index
            yield event


def _columns(trace: Trace, table: str, *names: str) -> Iterator[tuple[Any, ...]]:
    """Rows of a table's named columns, without building a row object each."""
    return zip(*(trace.tables[table].column(n) for n in names), strict=True)


def _collectives(x: _Export) -> Iterator[Event]:
    """Each torch.distributed call on the lane of the thread that made it."""
    for c in x.trace.tables["collectives"]:
        dur = c.dur if c.dur >= 0 else max(x.end - c.t, 0)
        if not x.keep(c.t, dur):
            continue
        name = f"{c.op} #{c.seq}" + (" (captured)" if c.graph >= 0 else "")
        note = {} if c.dur >= 0 else {"note": NEVER_RETURNED}
        yield slice_event(x.host_pid, x.thread_lane(c.thread),
                     clean(name + ("" if c.dur >= 0 else " (never returned)")), c.t, dur,
                     "collective", group=clean(c.group), seq=c.seq, bytes=c.bytes,
                     graph=c.graph, phase=c.phase, site=x.site(c.stack), **note)


def _teardown(x: _Export) -> Iterator[Event]:
    """destroy_process_group() calls, on the main thread's lane (they carry no thread)."""
    for index, end in tallies.teardown_calls(x.trace):
        begin = x.trace.teardown[index]
        dur = (end if end is not None else max(x.end, begin.t)) - begin.t
        if x.keep(begin.t, dur):
            note = {} if end is not None else {"note": NEVER_RETURNED}
            name = "destroy_process_group" + ("" if end is not None else " (never returned)")
            yield slice_event(x.host_pid, x.thread_lane(0), name, begin.t, dur, "teardown",
                         site=x.site(begin.stack), **note)


def _thread_instants(x: _Export) -> Iterator[Event]:
    for sync in x.trace.tables["syncs"]:
        if x.keep(sync.t):
            yield _instant(x.host_pid, x.thread_lane(sync.thread), f"sync: {sync.kind}",
                           sync.t, "sync", phase=sync.phase, graph=sync.graph,
                           site=x.site(sync.stack))
    for e in x.trace.exceptions:
        if x.keep(e.t):
            raised = e.chain[-1].type if e.chain else "exception"
            yield _instant(x.host_pid, x.thread_lane(e.thread), clean(raised), e.t,
                           "exception", where=e.where, graph=e.graph,
                           first_error=tallies.root_cause(e))
    for w in x.trace.warnings:
        if x.keep(w.t):
            yield _instant(x.host_pid, x.thread_lane(0), clean(w.category), w.t,
                           "warning", message=clean(w.message))


def _compile(x: _Export) -> Iterator[Event]:
    tid = x.lanes.tid(x.host_pid, "torch.compile")
    for e in x.trace.compile_events:
        if not x.keep(e.t, e.dur):
            continue
        args = {"compile_id": e.compile_id, "reason": clean(e.reason),
                "key": clean(e.key), "site": x.site(e.stack)}
        name = clean(e.kind.replace("_", " ") + (f" {e.compile_id}" if e.compile_id else ""))
        if e.dur > 0:
            yield slice_event(x.host_pid, tid, name, e.t, e.dur, "compile", **args)
        else:
            yield _instant(x.host_pid, tid, name, e.t, "compile", **args)


def _inputs(x: _Export) -> Iterator[Event]:
    for e in x.trace.input_events:
        if x.keep(e.t):
            yield _instant(x.host_pid, x.lanes.tid(x.host_pid, "captured inputs"),
                           clean(f"input {e.kind} (graph {e.graph})"), e.t, "input",
                           bytes=e.size, replays_before=e.replays,
                           site=x.site(e.stack), **({"let_go_at": x.site(e.dropped)}
                                                    if e.dropped != NONE else {}))


def _memory(x: _Export) -> Iterator[Event]:
    for sample in x.trace.tables["memory"]:
        if x.keep(sample.t):
            yield _counter(x.host_pid, "CUDA memory (bytes)", sample.t,
                           allocated=sample.allocated, reserved=sample.reserved)
    yield from _pool_counters(x.trace, x.keep, x.host_pid)


def _pool_counters(trace: Trace, keep: _Window, pid: int) -> Iterator[Event]:
    """Live bytes of each pool from the recorded allocations (a free counts only if its
    allocation was recorded, so a partial recording never goes below zero)."""
    live: dict[str, int] = defaultdict(int)
    sizes: dict[tuple[str, int], int] = {}
    names: dict[str, str] = {}
    for t, action, addr, size, pool in _columns(trace, "allocs", "t", "action", "addr", "size",
                                                "pool"):
        if action == ALLOC_ACTION:
            sizes[(pool, addr)] = size
            live[pool] += size
        elif action == "free_completed" and (pool, addr) in sizes:
            live[pool] -= sizes.pop((pool, addr))
        else:
            continue
        if keep(t):
            if pool not in names:
                names[pool] = clean(f"pool {pool or 'default'} live bytes")
            yield _counter(pid, names[pool], t, bytes=live[pool])


def _streams(x: _Export) -> Iterator[Event]:
    """Each replay on the GPU with its nodes (:mod:`.chrome_gpu`), and the stream and
    event operations."""
    devices = {g.id: g.device for g in x.trace.graphs}
    yield from replays_on_gpu(x, x.plans)
    for op in x.trace.tables["stream_ops"]:
        if x.keep(op.t):
            pid, tid = x.stream_lane(op.stream, devices.get(op.graph, x.device))
            yield _instant(pid, tid, clean(op.op), op.t, "stream", other=op.other,
                           phase=op.phase, site=x.site(op.stack))


def _eager_kernels(x: _Export) -> Iterator[Event]:
    return eager_kernels(x)


def _gpu(x: _Export) -> Iterator[Event]:
    for s in x.trace.tables["gpu_samples"]:
        if x.keep(s.t) and (not x.sampled or s.device in x.sampled):
            pid = x.gpu_pid(s.device)
            yield _counter(pid, "utilisation (%)", s.t, gpu=s.util, memory=s.mem_util)
            yield _counter(pid, "memory used (bytes)", s.t, used=s.mem_used)
            yield _counter(pid, "SM clock (MHz)", s.t, clock=s.sm_clock)


def _kind_lane(x: _Export, kind: EventKind) -> Iterator[Event]:
    """A kind no part above draws: its events on a host lane of their own, each with its
    fields as arguments; the lane is named only once it has one."""
    lane = kind.name.replace("_", " ")
    for row in rows_of(x.trace, kind):
        values = row._asdict() if kind.columnar else dataclasses.asdict(row)
        dur = values.get(kind.span, 0) if kind.span else 0
        if not x.keep(values["t"], max(dur, 0)):
            continue
        name = clean(f"{kind.label}: {values[kind.sort]}" if kind.sort else kind.label)
        args: dict[str, Any] = {k: clean(v) if isinstance(v, str) else v
                                for k, v in values.items() if k not in ("t", kind.span)}
        if "stack" in args:
            args["site"] = x.site(args.pop("stack"))
        tid = x.lanes.tid(x.host_pid, lane)
        if dur > 0:
            yield slice_event(x.host_pid, tid, name, values["t"], dur, kind.name, **args)
        else:
            yield _instant(x.host_pid, tid, name, values["t"], kind.name, **args)


def _nest(events: list[Event], lanes: _Lanes) -> list[Event]:
    """Move slices that partly overlap another slice of their lane to an extra lane, add the
    flow arrows, and drop the private keys."""
    placed = _place_slices([e for e in events if e["ph"] == "X"], lanes)
    flows = _flows(placed)
    for event in placed:
        for key in ("_t", "_end", "_flow", "_flow_end", "_flow_id"):
            event.pop(key, None)
    return placed + [e for e in events if e["ph"] != "X"] + flows


def _place_slices(slices: list[Event], lanes: _Lanes) -> list[Event]:
    """Each slice on the first level of its lane where it nests; level 0 is the lane itself,
    level N an extra lane named "<lane> (N+1)"."""
    levels: dict[tuple[int, int], list[list[int]]] = defaultdict(list)
    names = {tid: name for (_, name), tid in lanes.tids.items()}
    for event in sorted(slices, key=lambda e: (e["_t"], -e["_end"])):
        level = _fitting_level(levels[(event["pid"], event["tid"])], event["_t"], event["_end"])
        if level:
            event["tid"] = lanes.tid(event["pid"], f"{names[event['tid']]} ({level + 1})")
    return sorted(slices, key=lambda e: e["_t"])


def _fitting_level(levels: list[list[int]], start: int, end: int) -> int:
    """The first level whose open slices (a stack of their ends) all contain [start, end),
    once the slices that ended by ``start`` are closed; a new level if none does."""
    for level, open_ends in enumerate(levels):
        while open_ends and open_ends[-1] <= start:
            open_ends.pop()
        if not open_ends or end <= open_ends[-1]:
            open_ends.append(end)
            return level
    levels.append([end])
    return len(levels) - 1


def _flows(slices: list[Event]) -> list[Event]:
    """A host -> GPU arrow for each replay whose GPU slice was exported, and one to its
    first node (the end's ``_flow_id``, where it has its own)."""
    starts = {e["_flow"]: e for e in slices if "_flow" in e}
    flows: list[Event] = []
    for end in (e for e in slices if "_flow_end" in e):
        start = starts.get(end["_flow_end"])
        if start is not None:
            common = {"name": "launch", "cat": "launch",
                      "id": end.get("_flow_id", end["_flow_end"])}
            flows += [{**common, "ph": "s", "pid": start["pid"], "tid": start["tid"],
                       "ts": start["ts"]},
                      {**common, "ph": "f", "bp": "e", "pid": end["pid"], "tid": end["tid"],
                       "ts": end["ts"]}]
    return flows
