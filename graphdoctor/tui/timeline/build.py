"""The lanes of one trace, in the order Nsight Systems users know: what the run was doing
(phases), what each CPU thread did and the torch.distributed calls it made, what ran on
each CUDA stream (with, under a stream that replayed graphs, the nodes of each replay),
then memory, syncs, compile events and GPU utilisation. Lanes with
nothing on them are left out.

Building costs a few linear passes over the tables, done once, when the timeline is
first shown; every redraw after that only bisects.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from graphdoctor.facts.stream_names import stream_names
from graphdoctor.report.render.drawn_kinds import drawn_from_the_registry
from graphdoctor.trace.event_kinds import BY_NAME
from graphdoctor.trace.model import CAPTURE, NONE, REPLAY, Trace
from graphdoctor.tui import palette as marks
from graphdoctor.tui.events import teardown_end
from graphdoctor.tui.palette import Mark
from graphdoctor.tui.timeline.graph_groups import graph_group_lanes
from graphdoctor.tui.timeline.lanes import Lane, MemoryLane, PhaseLane, UtilisationLane
from graphdoctor.tui.timeline.memory import MemoryCurve
from graphdoctor.tui.timeline.node_lane import node_lane
from graphdoctor.tui.timeline.series import Series, TimeOrder, queued

Orders = dict[str, TimeOrder]


def build_lanes(trace: Trace, run_end: int) -> list[Lane]:
    orders = {name: TimeOrder(table) for name, table in trace.tables.items()}
    lanes: list[Lane] = [phase_lane(trace)]
    lanes += thread_lanes(trace, orders)
    lanes.append(collective_lane(trace, orders, run_end))
    lanes += stream_lanes(trace, orders, run_end)
    lanes += graph_group_lanes(trace, orders["replays"], run_end)
    lanes += [memory_lane(orders), sync_lane(orders), compile_lane(trace)]
    lanes += gpu_lanes(orders, run_end)
    return [lane for lane in lanes if lane.series or lane.key in ("phases", "cpu:0")]


def list_series(source: str, name: str, mark: Mark, items: Sequence[Any],
                keep: Callable[..., bool] = lambda item: True,
                end: Callable[..., int] | None = None, shaded: bool = True) -> Series:
    """A series over one of the trace's lists (exceptions, compile events...)."""
    picked = sorted((_start(item), index) for index, item in enumerate(items) if keep(item))
    rows = [index for _, index in picked]
    ends = [max(end(items[i]), t) for t, i in picked] if end else None
    return Series(source, name, mark, [t for t, _ in picked], rows, ends, shaded)


def _start(item: Any) -> int:
    for name in ("t", "start", "capture_start"):
        if hasattr(item, name):
            return int(getattr(item, name))
    raise TypeError(f"{type(item).__name__} has no time")


def phase_lane(trace: Trace) -> Lane:
    series = [list_series("phases", phase, mark, trace.phases, lambda p, n=phase: p.phase == n,
                          end=lambda p: p.end, shaded=False)
              for phase, mark in marks.PHASE_MARKS.items()]
    return PhaseLane("phases", "Phases", [s for s in series if len(s)],
                     about="eager ─, warmup, capture, replay: what the run was doing")


def thread_lanes(trace: Trace, orders: Orders) -> list[Lane]:
    threads = {0, *orders["replays"].distinct("thread"), *(e.thread for e in trace.exceptions)}
    return [_thread_lane(trace, orders, thread) for thread in sorted(threads)]


def _thread_lane(trace: Trace, orders: Orders, thread: int) -> Lane:
    series = [list_series("exceptions", "exception", marks.EXCEPTION, trace.exceptions,
                          lambda e: e.thread == thread)]
    replays = orders["replays"]
    series.append(replays.series("replays", "replay (host)", marks.REPLAY_HOST,
                                 replays.where(thread=thread), "dur"))
    if thread == 0:  # calls, warnings and input events carry no thread: the main one is likeliest
        series += _main_thread_series(trace, orders)
    label = "CPU main" if thread == 0 else f"CPU thr {thread}"
    return Lane(f"cpu:{thread}", label, [s for s in series if len(s)],
                about=f"host work: eager steps, replay() calls, exceptions "
                      f"{marks.EXCEPTION.glyph}, warnings {marks.WARNING_MARK.glyph}")


def _main_thread_series(trace: Trace, orders: Orders) -> list[Series]:
    calls = orders["calls"]
    series = [calls.series("calls", f"{mode} call", marks.CALL_MARKS.get(mode, marks.OTHER_EVENT),
                           calls.where(mode=mode), "dur")
              for mode in calls.distinct("mode")]
    series.append(list_series("warnings", "warning", marks.WARNING_MARK, trace.warnings))
    series.append(list_series("input_events", "captured input freed or rebound", marks.INPUT_EVENT,
                              trace.input_events))
    return series + _other_kinds(trace, orders)


def _other_kinds(trace: Trace, orders: Orders) -> list[Series]:
    """The kinds the lanes here draw in no way of their own (drawn_kinds.DRAWN_APART says
    which they do), on the main thread's lane in their registry mark, so a new kind shows
    without a change here."""
    series = []
    for kind in drawn_from_the_registry():
        mark = marks.kind_mark(kind)
        if kind.columnar:
            order = orders[kind.name]
            series.append(order.series(kind.name, kind.label, mark, range(len(order)),
                                       kind.span or None))
        else:
            series.append(list_series(kind.name, kind.label, mark, getattr(trace, kind.name),
                                      end=(lambda e, f=kind.span: e.t + getattr(e, f))
                                      if kind.span else None))
    return series


COLLECTIVE_KINDS = {"returned": marks.COLLECTIVE, "captured": marks.CAPTURED_COLLECTIVE,
                    "never returned": marks.NEVER_RETURNED}


def collective_lane(trace: Trace, orders: Orders, run_end: int) -> Lane:
    """torch.distributed calls as spans, and destroy_process_group(): what a rank was
    waiting for when a distributed run hung."""
    series = _collective_series(orders["collectives"], run_end) + _teardown_series(trace, run_end)
    return Lane("collectives", "Collectives", [s for s in series if len(s)],
                about=f"collectives {marks.COLLECTIVE.glyph}, captured "
                      f"{marks.CAPTURED_COLLECTIVE.glyph}, never returned "
                      f"{marks.NEVER_RETURNED.glyph} (to the run's end), "
                      f"destroy_process_group {marks.TEARDOWN.glyph}")


def _collective_series(collectives: TimeOrder, run_end: int) -> list[Series]:
    durations, graphs = collectives.column("dur"), collectives.column("graph")
    kinds = ["never returned" if dur < 0 else "captured" if graph != NONE else "returned"
             for dur, graph in zip(durations, graphs, strict=True)]
    series = []
    for kind, mark in COLLECTIVE_KINDS.items():
        positions = [p for p, k in enumerate(kinds) if k == kind]
        times = collectives.times_at(positions)
        ends = [max(run_end, t) if kind == "never returned" else t + durations[p]
                for p, t in zip(positions, times, strict=True)]
        series.append(Series("collectives", f"collective ({kind})", mark, times,
                             collectives.rows_at(positions), ends, shaded=kind == "returned"))
    return series


def _teardown_series(trace: Trace, run_end: int) -> list[Series]:
    """Each destroy_process_group() from its beginning to its end, or to the run's end."""
    begins = sorted((event.t, index) for index, event in enumerate(trace.teardown)
                    if event.kind == "begin")
    ends = [teardown_end(trace, index) for _, index in begins]
    series = []
    for name, mark, returned in (("destroy_process_group", marks.TEARDOWN, True),
                                 ("destroy_process_group (never returned)",
                                  marks.NEVER_RETURNED, False)):
        picked = [(t, i, end) for (t, i), end in zip(begins, ends, strict=True)
                  if (end is not None) == returned]
        series.append(Series("teardown", name, mark, [t for t, _, _ in picked],
                             [i for _, i, _ in picked],
                             [max(t, run_end if end is None else end) for t, _, end in picked],
                             shaded=False))
    return series


def stream_lanes(trace: Trace, orders: Orders, run_end: int) -> list[Lane]:
    """A lane per CUDA stream, each followed by the nodes of the graphs it replayed."""
    capture_streams = {g.stream for g in trace.graphs}
    anatomies = {g.id: g.anatomy for g in trace.graphs if g.anatomy is not None}
    lanes: list[Lane] = []
    for stream, name in stream_names(trace).items():
        role = "strm" if stream == 0 else "capture" if stream in capture_streams else "side"
        series = _stream_series(trace, orders, stream, run_end)
        lane = Lane(f"stream:{stream}", f"{name} {role}", series,
                    about=f"CUDA stream {stream}: captures {marks.CAPTURE_SPAN.glyph} (failed "
                          f"{marks.FAILED_CAPTURE_SPAN.glyph}), replays "
                          f"{marks.REPLAY_GPU.glyph} (each after the one before it ended: "
                          f"a stream runs in order), eager kernels where recorded "
                          f"(native programs), stream operations")
        lanes.append(lane)
        replays = next((s for s in series if s.source == "replays"), None)
        if replays is not None:
            graphs = orders["replays"].column("graph")
            lanes += node_lane(lane, stream, replays, [graphs[p] for p in orders[
                "replays"].where(stream=stream)], anatomies)
    return lanes


def _stream_series(trace: Trace, orders: Orders, stream: int, run_end: int) -> list[Series]:
    def capture_mark(graph: Any) -> Mark:
        return marks.FAILED_CAPTURE_SPAN if graph.status == "failed" else marks.CAPTURE_SPAN

    series = [list_series("graphs", f"capture ({status})", capture_mark(graph), trace.graphs,
                          lambda g, s=status: g.stream == stream and g.status == s,
                          end=lambda g: g.capture_end if g.capture_end != NONE else run_end,
                          shaded=False)
              for status, graph in {g.status: g for g in trace.graphs}.items()]
    replays, ops, allocs = orders["replays"], orders["stream_ops"], orders["allocs"]
    on_stream = replays.where(stream=stream)
    gpu_ends = list(map(max, replays.ends_at(on_stream, "gpu"), replays.ends_at(on_stream, "dur")))
    ran, ended = queued(replays.times_at(on_stream), gpu_ends)
    series.append(Series("replays", "replay (GPU)", marks.REPLAY_GPU, ran,
                         replays.rows_at(on_stream), ended, boundaries=True))
    series += [ops.series("stream_ops", op, marks.STREAM_OP_MARKS.get(op, marks.OTHER_EVENT),
                          ops.where(stream=stream, op=op)) for op in ops.distinct("op")]
    series.append(allocs.series("allocs", "allocation", marks.ALLOC_ON_STREAM,
                                allocs.where(stream=stream)))
    kernels = orders["kernels"]  # launched outside a graph: eager work beside the replays
    series.append(kernels.series("kernels", "eager kernel", marks.kind_mark(BY_NAME["kernels"]),
                                 kernels.where(stream=stream), "dur"))
    return [s for s in series if len(s)]


def memory_lane(orders: Orders) -> Lane:
    samples, allocs = orders["memory"], orders["allocs"]
    curve = MemoryCurve.from_columns(samples.column("t"), samples.column("allocated"),
                                     allocs.column("t"), allocs.column("action"),
                                     allocs.column("size"))
    everything = range(len(allocs))
    series = [allocs.series("allocs", "allocation", marks.ALLOC_ON_STREAM, everything),
              samples.series("memory", "allocator totals", marks.OTHER_EVENT,
                             range(len(samples)))]
    return MemoryLane("memory", "Memory", [s for s in series if len(s)], curve=curve,
                      flat=curve.flat(max(samples.column("t")[-1:] + allocs.column("t")[-1:],
                                          default=0)),
                      about="bytes allocated, from 0 to the window's high")


def sync_lane(orders: Orders) -> Lane:
    syncs = orders["syncs"]
    series = [syncs.series("syncs", f"sync in {phase}",
                           marks.SYNC_MARKS.get(phase, marks.OTHER_EVENT), syncs.where(phase=phase))
              for phase in syncs.distinct("phase")]
    return Lane("syncs", "Syncs", [s for s in series if len(s)],
                about=f"host-device syncs {marks.SYNC_MARKS[REPLAY].glyph}; in a capture "
                      f"{marks.SYNC_MARKS[CAPTURE].glyph}")


def compile_lane(trace: Trace) -> Lane:
    kinds = sorted({event.kind for event in trace.compile_events})
    series = [list_series("compile_events", kind, marks.COMPILE_MARKS.get(kind, marks.OTHER_EVENT),
                          trace.compile_events, lambda e, k=kind: e.kind == k,
                          end=(lambda e: e.t + e.dur) if kind == "compile" else None)
              for kind in kinds]
    return Lane("compile", "Compile", series,
                about="torch.compile: " + ", ".join(
                    f"{marks.COMPILE_MARKS.get(kind, marks.OTHER_EVENT).glyph} {kind}"
                    for kind in kinds))


def gpu_lanes(orders: Orders, run_end: int) -> list[Lane]:
    samples = orders["gpu_samples"]
    lanes: list[Lane] = []
    for device in samples.distinct("device"):
        positions = samples.where(device=device)
        readings = samples.series("gpu_samples", "GPU reading", marks.OTHER_EVENT, positions)
        utilisation = samples.column("util")
        lanes.append(UtilisationLane(f"gpu:{device}", f"GPU{device} util", [readings],
                                     readings=readings,
                                     values=[utilisation[i] for i in positions],
                                     run_end=run_end,
                                     about="GPU utilisation from NVML, 0-100%"))
    return lanes
