"""The report schema's event tables, generated from the kinds of event that declare them.

A columnar kind's row (:mod:`graphdoctor.trace.event_kinds`) says its columns and their
types; the schema says the same for readers outside graphdoctor. So that there is no second
copy to keep by hand, the ``tables`` part of ``report.schema.json`` is written from the rows:

    python -m graphdoctor.report.schema_tables

and a test checks that the shipped file is what this writes. An integer field is a column
of integers; a string field a column of string-table indices with its ``NAME@s`` marker.
Which tables a report must have (those every report since 1.0 holds) stays in the file.
"""

from __future__ import annotations

import json
import typing
from pathlib import Path
from typing import Any

from graphdoctor.files.writing import write_file
from graphdoctor.trace.event_kinds import COLUMNAR, EventKind

SCHEMA_PATH = Path(__file__).with_name("report.schema.json")
INT_COLUMN = {"$ref": "#/$defs/int_column"}
STRING_COLUMN = {"$ref": "#/$defs/string_column"}
STRING_MARKER = {"$ref": "#/$defs/string_column_marker"}


def tables() -> dict[str, Any]:
    """The schema of each columnar kind's table, by name."""
    return {kind.name: _table(kind) for kind in COLUMNAR}


def _table(kind: EventKind) -> dict[str, Any]:
    return {"type": "object", "description": _description(kind),
            "required": _required(kind), "properties": _columns(kind),
            "additionalProperties": INT_COLUMN}


def _required(kind: EventKind) -> list[str]:
    """Every column but those added to a table after it first shipped, which have a default
    (older reports lack them: a minor version never requires a new field); a row's phase,
    which assembly always fills, stays required."""
    defaults = getattr(kind.row, "_field_defaults", {})
    return [name for name in kind.fields if name not in defaults or name == "phase"]


def _columns(kind: EventKind) -> dict[str, Any]:
    columns: dict[str, Any] = {}
    for name, kind_of_value in typing.get_type_hints(kind.row).items():
        if kind_of_value is str:
            columns |= {name: STRING_COLUMN, f"{name}@s": STRING_MARKER}
        else:
            columns[name] = INT_COLUMN
    return columns


def _description(kind: EventKind) -> str:
    """The row's docstring, on one line, its ``code`` as markdown writes it."""
    return " ".join((kind.row.__doc__ or kind.label).split()).replace("``", "`")


def with_tables(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with its tables as the rows declare them."""
    schema["$defs"]["trace"]["properties"]["tables"]["properties"] = tables()
    return schema


def write(path: Path = SCHEMA_PATH) -> None:
    schema = with_tables(json.loads(path.read_text(encoding="utf-8")))
    write_file(path, (json.dumps(schema, indent=1, ensure_ascii=False) + "\n").encode())


if __name__ == "__main__":
    write()
