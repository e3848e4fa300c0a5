"""One recorded event at a time: where it is in the trace, when it happened, and what the
details pane says about it. Pure functions over the trace; no Textual import.

An :class:`EventRef` names an event exactly as a finding's evidence does: the trace table
or list (``kind``) and the row in it (``index``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

from graphdoctor.diagnose.findings import Evidence
from graphdoctor.facts.locations import where
from graphdoctor.facts.queries import graph_by_id
from graphdoctor.facts.stream_names import stream_label, stream_names
from graphdoctor.facts.tallies import teardown_calls
from graphdoctor.report.disk_lines import CONTEXT_RADIUS, around
from graphdoctor.report.document import Report
from graphdoctor.trace.event_kinds import BY_NAME, HOST_NOT_TIMED, EventKind, rows_of
from graphdoctor.trace.model import NONE, Frame, Trace
from graphdoctor.units import NOT_MEASURED_WORDS, format_bytes, format_duration, format_moment

# What a ref may name besides the kinds of event: the trace's structure.
STRUCTURE = ("graphs", "phases", "functions")


@dataclass(frozen=True)
class EventRef:
    """``rank`` says whose trace the row is in: -1 in a single-process report, where there
    is only one, so refs there read and compare as they always did."""

    kind: str
    index: int
    rank: int = NONE


@dataclass(frozen=True)
class SourceLine:
    number: int
    text: str
    is_target: bool


@dataclass(frozen=True)
class EventDetails:
    """What the details pane shows: a title, labelled fields and the stack, outermost first."""

    ref: EventRef
    title: str
    start: int | None
    end: int | None
    fields: tuple[tuple[str, str], ...]
    stack: tuple[Frame, ...] = ()


def ref_from_evidence(trace: Trace, evidence: Evidence, rank: int = NONE) -> EventRef | None:
    """The event a piece of evidence points at in ``trace`` (the trace of ``rank``), or None
    if the trace has no such row."""
    ref = EventRef(evidence.kind, evidence.index, rank)
    return ref if exists(trace, ref) else None


def exists(trace: Trace, ref: EventRef) -> bool:
    if ref.kind in BY_NAME:
        return 0 <= ref.index < len(rows_of(trace, BY_NAME[ref.kind]))
    if ref.kind in STRUCTURE:
        return 0 <= ref.index < len(getattr(trace, ref.kind))
    return False


def event_span(trace: Trace, ref: EventRef) -> tuple[int, int] | None:
    """When the event happened, [start, end]; an instant has end == start."""
    if not exists(trace, ref):
        return None
    if ref.kind in BY_NAME and BY_NAME[ref.kind].columnar:
        return _table_span(trace, ref)
    item = getattr(trace, ref.kind)[ref.index]
    if ref.kind == "graphs":
        end = item.capture_end if item.capture_end != NONE else item.capture_start
        return item.capture_start, max(end, item.capture_start)
    if ref.kind == "phases":
        return item.start, item.end
    if ref.kind == "functions":
        return None
    if ref.kind == "teardown":
        end = teardown_end(trace, ref.index)
        return item.t, item.t if end is None else end
    return item.t, item.t + max(getattr(item, "dur", 0), 0)


def _table_span(trace: Trace, ref: EventRef) -> tuple[int, int]:
    """A row's [t, t + its longest duration]; a duration of -1 (a collective that never
    returned, a GPU time never measured) counts as none."""
    data = trace.tables[ref.kind].data
    start = data["t"][ref.index]
    lengths = [data[column][ref.index] for column in ("dur", "gpu") if column in data]
    return start, start + max([0, *lengths])


def teardown_end(trace: Trace, index: int) -> int | None:
    """When the destroy_process_group() that began at ``trace.teardown[index]`` returned;
    None if it never did (a teardown hang) or ``index`` is not a beginning."""
    return dict(teardown_calls(trace)).get(index)


def source_context(report: Report, file: str, line: int,
                   radius: int = CONTEXT_RADIUS) -> list[SourceLine]:
    """The lines of ``file`` around ``line`` that the report kept, the target marked."""
    return marked(around(report.sources.get(file, {}), line, radius), line)


def marked(lines: Mapping[int, str], line: int) -> list[SourceLine]:
    """Numbered lines (number -> text) in order, ``line`` marked as the target."""
    return [SourceLine(number, text, number == line) for number, text in sorted(lines.items())]


def describe(trace: Trace, ref: EventRef, streams: dict[int, str] | None = None) -> EventDetails:
    """The details pane's account of one event; ``streams`` from :func:`stream_names`."""
    span = event_span(trace, ref)
    start, end = span if span else (None, None)
    names = stream_names(trace) if streams is None else streams
    describer = _DESCRIBERS.get(ref.kind) or partial(_any_kind, BY_NAME[ref.kind])
    title, fields, stack = describer(_Context(trace, names), ref.index)
    when = (("when", _when(start, end)),) if start is not None else ()
    return EventDetails(ref, title, start, end, when + tuple(fields), tuple(trace.stack(stack)))


def _when(start: int, end: int | None) -> str:
    if end is None or end == start:
        return format_moment(start, 1_000)
    return f"{format_moment(start, 1_000)} for {format_duration(end - start)}"


Described = tuple[str, list[tuple[str, str]], int]


class _Context(NamedTuple):
    trace: Trace
    streams: dict[int, str]


def _row(context: _Context, kind: str, index: int) -> Any:
    return context.trace.tables[kind][index]


def _graph_name(graph: int) -> str:
    return "—" if graph == NONE else str(graph)


def _stream_name(context: _Context, stream: int) -> str:
    return stream_label(context.streams, stream)


def _replay(context: _Context, index: int) -> Described:
    row = _row(context, "replays", index)
    gpu = format_duration(row.gpu) if row.gpu >= 0 else NOT_MEASURED_WORDS
    host = NOT_MEASURED_WORDS if row.dur == HOST_NOT_TIMED else format_duration(row.dur)
    return (f"replay of graph {row.graph}",
            [("host", host), ("GPU", gpu),
             ("stream", _stream_name(context, row.stream)), ("thread", str(row.thread))], NONE)


def _call(context: _Context, index: int) -> Described:
    row = _row(context, "calls", index)
    functions = context.trace.functions
    name = functions[row.fn].name if 0 <= row.fn < len(functions) else f"#{row.fn}"
    gpu = format_duration(row.gpu) if row.gpu >= 0 else "not measured"
    return (f"call of {name} ({row.mode})",
            [("host", format_duration(row.dur)), ("GPU", gpu),
             ("graph", _graph_name(row.graph))], NONE)


def _alloc(context: _Context, index: int) -> Described:
    row = _row(context, "allocs", index)
    return (f"{row.action} {format_bytes(row.size)}",
            [("phase", row.phase), ("pool", row.pool), ("graph", _graph_name(row.graph)),
             ("stream", _stream_name(context, row.stream)), ("address", hex(row.addr)),
             ("device", str(row.device))], row.stack)


def _sync(context: _Context, index: int) -> Described:
    row = _row(context, "syncs", index)
    return (f"sync: {row.kind}",
            [("phase", row.phase), ("graph", _graph_name(row.graph)),
             ("stream", _stream_name(context, row.stream)), ("thread", str(row.thread))], row.stack)


def _stream_op(context: _Context, index: int) -> Described:
    row = _row(context, "stream_ops", index)
    return (f"stream {row.op} on {_stream_name(context, row.stream)}",
            [("phase", row.phase), ("other", _stream_name(context, row.other)),
             ("graph", _graph_name(row.graph)), ("thread", str(row.thread))], row.stack)


def _memory(context: _Context, index: int) -> Described:
    row = _row(context, "memory", index)
    return ("allocator totals",
            [("allocated", format_bytes(row.allocated)), ("reserved", format_bytes(row.reserved)),
             ("phase", row.phase), ("graph", _graph_name(row.graph))], NONE)


def _gpu_sample(context: _Context, index: int) -> Described:
    row = _row(context, "gpu_samples", index)
    return (f"GPU {row.device} reading",
            [("utilisation", f"{row.util}%"), ("memory busy", f"{row.mem_util}%"),
             ("memory used", format_bytes(row.mem_used)), ("SM clock", f"{row.sm_clock} MHz")],
            NONE)


def _exception(context: _Context, index: int) -> Described:
    record = context.trace.exceptions[index]
    fields = [("raised at", record.where), ("graph", _graph_name(record.graph)),
              ("thread", str(record.thread))]
    for number, link in enumerate(record.chain, 1):
        error = f" [{link.cuda_error}]" if link.cuda_error else ""
        fields.append((f"chain {number}", f"{link.type}: {link.message}{error}"))
    title = f"{record.raised.type}: {record.raised.message}" if record.chain else "exception"
    return title, fields, record.root.stack if record.chain else NONE


def _compile_event(context: _Context, index: int) -> Described:
    event = context.trace.compile_events[index]
    fields = [(name, value) for name, value in (
        ("compile id", event.compile_id), ("function", event.function), ("reason", event.reason),
        ("detail", event.detail), ("key", event.key)) if value]
    if event.dur:
        fields.append(("took", format_duration(event.dur)))
    return f"compile: {event.kind}", fields, event.stack


def _warning(context: _Context, index: int) -> Described:
    warning = context.trace.warnings[index]
    return (f"{warning.category}: {warning.message}",
            [("graph", _graph_name(warning.graph))], warning.stack)


def _input_event(context: _Context, index: int) -> Described:
    event = context.trace.input_events[index]
    fields = [("address", hex(event.addr)), ("size", format_bytes(event.size)),
              ("replays before", str(event.replays)),
              ("read at", where(context.trace, event.stack))]
    if event.dropped != NONE:  # the line that let it go: the one to change
        fields.append(("let go at", where(context.trace, event.dropped)))
    return (f"input of graph {event.graph} {event.kind}", fields,
            event.dropped if event.dropped != NONE else event.stack)


def _graph(context: _Context, index: int) -> Described:
    graph = context.trace.graphs[index]
    fields = [("api", graph.api), ("status", graph.status), ("pool", graph.pool or "—"),
              ("stream", _stream_name(context, graph.stream)),
              ("error mode", graph.capture_error_mode)]
    if graph.pool_bytes:
        fields.append(("pool size", format_bytes(graph.pool_bytes)))
    return f"capture of graph {graph.id}", fields, graph.stack


NEVER_RETURNED = [("outcome", "never returned")]  # the "when" field has a returned call's length


def _collective(context: _Context, index: int) -> Described:
    row = _row(context, "collectives", index)
    captured = f", captured in graph {row.graph}" if row.graph != NONE else ""
    return (f"{row.op} #{row.seq} of group {row.group}{captured}",
            [*(NEVER_RETURNED if row.dur < 0 else []), ("size", format_bytes(row.bytes)),
             ("phase", row.phase), ("graph", _graph_name(row.graph)),
             ("thread", str(row.thread))], row.stack)


def _teardown(context: _Context, index: int) -> Described:
    event = context.trace.teardown[index]
    if event.kind != "begin":
        return f"destroy_process_group() {event.kind}", [], event.stack
    returned = teardown_end(context.trace, index) is not None
    return "destroy_process_group()", [] if returned else NEVER_RETURNED, event.stack


def _frozen_value(context: _Context, index: int) -> Described:
    """A number a graph froze, seen with another value: its stack is the line that changed
    it, where known; the fields name the capture that froze it and the use in it."""
    row = _row(context, "frozen_values", index)
    graph = graph_by_id(context.trace, row.graph)
    captured = f", captured at {where(context.trace, graph.stack)}" if graph else ""
    owner = f"{row.held_by} of {row.owner}" if row.owner else row.held_by
    return (f"{row.name} is {row.value}; graph {row.graph} froze {row.captured}",
            [("graph", f"{row.graph}{captured}"), ("held by", owner),
             ("frozen at", where(context.trace, row.site)), ("seen", row.seen),
             ("replays before", str(row.replays)), ("change", f"#{row.changes}")], row.stack)


def _phase(context: _Context, index: int) -> Described:
    span = context.trace.phases[index]
    return f"{span.phase} phase", [("graph", _graph_name(span.graph))], NONE


def _function(context: _Context, index: int) -> Described:
    function = context.trace.functions[index]
    where = f"{function.file}:{function.line}" if function.file else "—"
    return f"function {function.name}", [("kind", function.kind), ("defined", where)], NONE


def _any_kind(kind: EventKind, context: _Context, index: int) -> Described:
    """A kind with no account of its own: its label, and each field as recorded."""
    row = rows_of(context.trace, kind)[index]
    values = row._asdict() if kind.columnar else dataclasses.asdict(row)
    title = f"{kind.label}: {values[kind.sort]}" if kind.sort else kind.label
    fields = [(name.replace("_", " "), str(value)) for name, value in values.items()
              if name not in ("t", kind.span, kind.sort, "stack")]
    return title, fields, int(values.get("stack", NONE))


_DESCRIBERS: dict[str, Callable[[_Context, int], Described]] = {
    "replays": _replay, "calls": _call, "allocs": _alloc, "syncs": _sync,
    "stream_ops": _stream_op, "memory": _memory, "gpu_samples": _gpu_sample,
    "exceptions": _exception, "compile_events": _compile_event, "warnings": _warning,
    "input_events": _input_event, "graphs": _graph, "phases": _phase, "functions": _function,
    "collectives": _collective, "teardown": _teardown, "frozen_values": _frozen_value,
}
