"""The report's JSON Schema, and the check every report passes before it is read.

``report.schema.json`` (shipped in this package) is the contract for everyone who reads a
report without graphdoctor. The loader checks each report against that same file, so a
damaged or hand-edited report fails with one message that names the place
(``trace.graphs[0].id: expected integer, got string``) instead of failing later, deep in
a renderer. The check understands the part of JSON Schema the file uses
(:data:`SUPPORTED_KEYWORDS`; a test keeps the file within it) and checks a long column of
numbers in one pass, so a million-event report is checked in a fraction of a second.

After the schema, :func:`check_references` checks what a schema cannot say: that string,
frame and column references point inside their tables.
"""

from __future__ import annotations

import functools
import json
import math
import re
import typing
from importlib import resources
from typing import Any

from graphdoctor.trace.model import TABLE_ROWS

SCHEMA_FILE = "report.schema.json"

# Keywords the checker enforces, and keywords that only describe.
VALIDATION_KEYWORDS = frozenset({
    "$ref", "type", "const", "enum", "minimum", "pattern", "properties", "required",
    "additionalProperties", "propertyNames", "items", "prefixItems", "minItems", "maxItems",
    "anyOf",
})
ANNOTATION_KEYWORDS = frozenset({"$schema", "$id", "$comment", "$defs", "title", "description",
                                 "examples"})
SUPPORTED_KEYWORDS = VALIDATION_KEYWORDS | ANNOTATION_KEYWORDS

_PYTHON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,), "array": (list,), "string": (str,), "integer": (int,),
    "number": (int, float), "boolean": (bool,), "null": (type(None),),
}
_SCALAR_ITEM_KEYS = frozenset({"type", "minimum"}) | ANNOTATION_KEYWORDS
# The types a column of scalars may hold, compared exactly: a bool in an integer column
# sends the column to the slow path, which decides about it
_SCALAR_COLUMN_TYPES: dict[str, frozenset[type]] = {
    "integer": frozenset({int}), "number": frozenset({int, float}), "string": frozenset({str}),
    "boolean": frozenset({bool}),
}


class SchemaViolation(ValueError):
    """The data does not follow the schema; ``str()`` names the place and the problem."""

    def __init__(self, path: str, problem: str):
        super().__init__(f"{path}: {problem}")


@functools.cache
def report_schema() -> dict[str, Any]:
    """The schema as shipped in the package (read once)."""
    text = resources.files(__package__).joinpath(SCHEMA_FILE).read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def check(data: Any) -> None:
    """Raise :class:`SchemaViolation` unless ``data`` follows the report schema and its
    references hold."""
    _Checker(report_schema()).check(data, report_schema(), "report")
    check_references(data["trace"])
    for child in data.get("children") or []:  # each process the script started
        check_references(child["trace"])


def json_type(value: Any) -> str:
    """The JSON name of a Python value's type, as a schema would write it."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    for name, types in _PYTHON_TYPES.items():
        if isinstance(value, types):
            return name
    return type(value).__name__


def _is_type(value: Any, name: str) -> bool:
    if name in ("integer", "number") and isinstance(value, bool):
        return False  # JSON keeps true and 1 apart, and so must we
    if name == "number" and isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, _PYTHON_TYPES[name])


class _Checker:
    def __init__(self, root: dict[str, Any]):
        self.root = root

    def resolve(self, schema: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in schema:
            schema = self.root["$defs"][schema["$ref"].removeprefix("#/$defs/")]
        return schema

    def check(self, value: Any, schema: dict[str, Any], path: str) -> None:
        schema = self.resolve(schema)
        self._check_type(value, schema, path)
        self._check_value(value, schema, path)
        if isinstance(value, dict):
            self._check_object(value, schema, path)
        elif isinstance(value, list):
            self._check_array(value, schema, path)
        if "anyOf" in schema:
            self._check_any_of(value, schema["anyOf"], path)

    def _check_type(self, value: Any, schema: dict[str, Any], path: str) -> None:
        wanted = schema.get("type")
        if wanted is None:
            return
        names = [wanted] if isinstance(wanted, str) else wanted
        if not any(_is_type(value, name) for name in names):
            raise SchemaViolation(path, f"expected {' or '.join(names)}, got {json_type(value)}")

    def _check_value(self, value: Any, schema: dict[str, Any], path: str) -> None:
        if "const" in schema and value != schema["const"]:
            raise SchemaViolation(path, f"expected {json.dumps(schema['const'])}")
        if "enum" in schema and value not in schema["enum"]:
            raise SchemaViolation(path, f"expected one of {', '.join(map(str, schema['enum']))}")
        if "minimum" in schema and _is_type(value, "number") and value < schema["minimum"]:
            raise SchemaViolation(path, f"{value} is below the minimum {schema['minimum']}")
        pattern = schema.get("pattern")
        if pattern is not None and isinstance(value, str) and not re.search(pattern, value):
            raise SchemaViolation(path, f"{_quote(value)} does not match {schema['pattern']}")

    def _check_object(self, value: dict[str, Any], schema: dict[str, Any], path: str) -> None:
        for name in schema.get("required", ()):
            if name not in value:
                raise SchemaViolation(path, f"the field {name!r} is missing")
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        names = schema.get("propertyNames")
        for key, item in value.items():
            where = f"{path}.{key}" if key.isidentifier() else f"{path}[{_quote(key)}]"
            if names is not None:
                self.check(key, names, f"{where} (the name)")
            if key in properties:
                self.check(item, properties[key], where)
            elif extra is False:
                raise SchemaViolation(where, "this field is not allowed here")
            elif isinstance(extra, dict):
                self.check(item, extra, where)

    def _check_array(self, value: list[Any], schema: dict[str, Any], path: str) -> None:
        if len(value) < schema.get("minItems", 0):
            raise SchemaViolation(path, f"expected at least {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            raise SchemaViolation(path, f"expected at most {schema['maxItems']} items")
        prefix = schema.get("prefixItems", [])
        for index, (item, item_schema) in enumerate(zip(value, prefix, strict=False)):
            self.check(item, item_schema, f"{path}[{index}]")
        if "items" in schema and len(value) > len(prefix):
            self._check_items(value, len(prefix), self.resolve(schema["items"]), path)

    def _check_items(self, value: list[Any], start: int, items: dict[str, Any],
                     path: str) -> None:
        """Items after the prefix; a plain scalar column is checked in one pass."""
        if set(items) <= _SCALAR_ITEM_KEYS and isinstance(items.get("type"), str):
            if _scalar_column_ok(value[start:] if start else value, items):
                return
        for index in range(start, len(value)):
            self.check(value[index], items, f"{path}[{index}]")

    def _check_any_of(self, value: Any, options: list[dict[str, Any]], path: str) -> None:
        problems = [self._problem(value, option, path) for option in options]
        if all(problems):
            raise SchemaViolation(path, " and ".join(problems) if problems else "no option fits")

    def _problem(self, value: Any, schema: dict[str, Any], path: str) -> str:
        """What is wrong with ``value`` under ``schema``, or "" if nothing."""
        try:
            self.check(value, schema, path)
        except SchemaViolation as violation:
            return str(violation).removeprefix(f"{path}: ")
        return ""


def _scalar_column_ok(values: list[Any], items: dict[str, Any]) -> bool:
    """True if every value has the item type (and minimum); False sends the caller to the
    slow path, which finds the first bad item and names it."""
    allowed = _SCALAR_COLUMN_TYPES.get(items["type"])
    if allowed is None or not set(map(type, values)) <= allowed:
        return False
    if float in allowed and not all(map(math.isfinite, values)):
        return False
    return "minimum" not in items or not values or min(values) >= items["minimum"]


def check_references(trace: dict[str, Any]) -> None:
    """Every string, frame and row reference of a schema-valid trace points inside its table."""
    strings = len(trace["strings"])
    for index, frame in enumerate(trace["frames"]):
        if max(frame[0], frame[2], frame[3]) >= strings:
            raise SchemaViolation(f"report.trace.frames[{index}]", "names a string past the table")
    frames = len(trace["frames"])
    for index, stack in enumerate(trace["stacks"]):
        if stack and max(stack) >= frames:
            raise SchemaViolation(f"report.trace.stacks[{index}]", "names a frame past the list")
    for name, columns in trace["tables"].items():
        path = f"report.trace.tables.{name}"
        _check_table(path, columns, strings)
        if name in TABLE_ROWS:
            _check_column_kinds(path, TABLE_ROWS[name], columns)


def _check_table(path: str, columns: dict[str, list[int]], strings: int) -> None:
    lengths = {len(column) for key, column in columns.items() if not key.endswith("@s")}
    if len(lengths) > 1:
        raise SchemaViolation(path, f"columns differ in length ({sorted(lengths)})")
    for key in columns:
        if key.endswith("@s") and key[:-2] in columns:
            column = columns[key[:-2]]
            if column and max(column) >= strings:  # the schema has checked the minimum
                raise SchemaViolation(f"{path}.{key[:-2]}", "names a string outside the table")


@functools.cache
def _field_types(row_type: Any) -> dict[str, Any]:
    return typing.get_type_hints(row_type)


def _check_column_kinds(path: str, row_type: Any, columns: dict[str, list[int]]) -> None:
    """A text column of the model is marked as string indices (when it has rows), and a
    number column is not: otherwise numbers would be read as text or the other way round."""
    for name, kind in _field_types(row_type).items():
        is_text = kind is str
        marked = f"{name}@s" in columns
        if columns.get(name) and is_text != marked:
            problem = "is text but not marked" if is_text else "is a number but marked as text"
            raise SchemaViolation(f"{path}.{name}", f"{problem} ({name}@s)")


def _quote(text: str) -> str:
    return json.dumps(text if len(text) <= 40 else text[:40] + "...")
