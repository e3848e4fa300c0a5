"""The trace as JSON-ready data, and back.

Layout (``TRACE_FORMAT`` version 1): a string table; frames as ``[file, line, function,
kind]`` string indices; stacks as lists of frame ids; bulky tables as columns, with times
stored as deltas and text columns as string indices; the rare records as plain objects.
Readers ignore fields they do not know and fill in missing ones with defaults, so a newer
minor version stays readable.
"""

from __future__ import annotations

import dataclasses
from functools import partial
from itertools import accumulate
from typing import Any, TypeVar

from graphdoctor.trace.anatomy import from_plain
from graphdoctor.trace.event_kinds import LISTED
from graphdoctor.trace.model import (
    TABLE_ROWS,
    Device,
    ErrorLink,
    ExceptionRecord,
    Frame,
    Function,
    Graph,
    Meta,
    Note,
    PhaseSpan,
    RunStatus,
    SourceFile,
    Table,
    Trace,
)

TRACE_VERSION = 1
_T = TypeVar("_T")


class TraceFormatError(ValueError):
    """The data is not a trace this graphdoctor can read."""


class _Strings:
    def __init__(self) -> None:
        self.items: list[str] = []
        self._index: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        index = self._index.get(text)
        if index is None:
            index = self._index[text] = len(self.items)
            self.items.append(text)
        return index


def encode(trace: Trace) -> dict[str, Any]:
    strings = _Strings()
    return {
        "version": TRACE_VERSION,
        "meta": _plain(trace.meta),
        "status": _plain(trace.status),
        "frames": [[strings(f.file), f.line, strings(f.func), strings(f.kind)]
                   for f in trace.frames],
        "stacks": [list(s) for s in trace.stacks],
        "functions": [_plain(f) for f in trace.functions],
        "graphs": [_plain(g) for g in trace.graphs],
        **{kind.name: [_plain(e) for e in getattr(trace, kind.name)] for kind in LISTED},
        "phases": [[p.phase, p.start, p.end, p.graph] for p in trace.phases],
        "counters": trace.counters,
        "replay_counts": {str(k): v for k, v in trace.replay_counts.items()},
        "tables": {name: _encode_table(t, strings) for name, t in trace.tables.items()},
        "strings": strings.items,
    }


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _encode_table(table: Table[Any], strings: _Strings) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for name, column in table.data.items():
        if name == "t":
            out[name] = [b - a for a, b in zip([0, *column], column)]
        elif column and isinstance(column[0], str):
            out[name] = [strings(v) for v in column]
            out[name + "@s"] = []  # marks a string column
        else:
            out[name] = list(column)
    return out


def decode(data: dict[str, Any]) -> Trace:
    if not isinstance(data, dict) or not isinstance(data.get("version"), int):
        raise TraceFormatError("no trace version")
    if data["version"] > TRACE_VERSION:
        raise TraceFormatError(f"trace version {data['version']} is newer than this graphdoctor "
                               f"reads ({TRACE_VERSION})")
    strings = data.get("strings", [])
    trace = Trace(meta=_meta(data.get("meta", {})), status=_build(RunStatus, data.get("status")))
    trace.frames = [Frame(strings[f[0]], int(f[1]), strings[f[2]], strings[f[3]])
                    for f in data.get("frames", [])]
    trace.stacks = [tuple(int(i) for i in s) for s in data.get("stacks", [])]
    trace.functions = [_build(Function, f) for f in data.get("functions", [])]
    trace.graphs = [_build(Graph, g, callees=tuple, uncovered=tuple, anatomy=from_plain,
                           paces=_ints)
                    for g in data.get("graphs", [])]
    for kind in LISTED:
        build = _exception if kind.row is ExceptionRecord else partial(_build, kind.row)
        setattr(trace, kind.name, [build(e) for e in data.get(kind.name, [])])
    trace.phases = [PhaseSpan(p[0], int(p[1]), int(p[2]), int(p[3]))
                    for p in data.get("phases", [])]
    trace.counters = dict(data.get("counters", {}))
    trace.replay_counts = {int(k): int(v) for k, v in (data.get("replay_counts") or {}).items()}
    for name, row_type in TABLE_ROWS.items():
        if name in data.get("tables", {}):
            trace.tables[name] = _decode_table(row_type, data["tables"][name], strings)
    return trace


def _build(cls: type[_T], data: Any, **convert: Any) -> _T:
    if not isinstance(data, dict):
        return cls()
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    kwargs = {k: v for k, v in data.items() if k in names}
    for key, fn in convert.items():
        if key in kwargs:
            kwargs[key] = fn(kwargs[key])
    return cls(**kwargs)


def _ints(value: Any) -> tuple[int, ...]:
    """A list of whole numbers as written; anything else in it left out (a stranger's)."""
    if not isinstance(value, list):
        return ()
    return tuple(v for v in value if isinstance(v, int) and not isinstance(v, bool))


def _meta(data: dict[str, Any]) -> Meta:
    return _build(Meta, data, argv=tuple, command=tuple,
                  env=lambda e: tuple(tuple(p) for p in e),
                  devices=lambda ds: tuple(_build(Device, d) for d in ds),
                  not_recorded=lambda ns: tuple(_build(Note, n) for n in ns),
                  sources=lambda ss: tuple(_build(SourceFile, s) for s in ss))


def _exception(data: dict[str, Any]) -> ExceptionRecord:
    return _build(ExceptionRecord, data,
                  chain=lambda links: tuple(_build(ErrorLink, link) for link in links))


def _decode_table(row_type: Any, columns: dict[str, list[Any]], strings: list[str]) -> Table[Any]:
    data: dict[str, list[Any]] = {}
    length = len(columns.get("t", []))
    for name in row_type._fields:
        column = columns.get(name)
        if column is None:
            default = row_type._field_defaults.get(name, "" if name in ("phase", "pool") else -1)
            data[name] = [default] * length
        elif name == "t":
            data[name] = _undelta(column)
        elif name + "@s" in columns:
            data[name] = list(map(strings.__getitem__, column))  # faster than a comprehension
        else:
            data[name] = column
        if len(data[name]) != length:
            raise TraceFormatError(f"table column {name} has {len(data[name])} rows, not {length}")
    return Table(row_type, data)


def _undelta(deltas: list[int]) -> list[int]:
    return list(accumulate(deltas))
