"""The loader against damaged reports: truncated at any byte, fields deleted, replaced or of
the wrong type, versions bumped. Loading either gives a Report or raises ReportError, and a
report that loads can be rendered, exported, gated, diffed and redacted without error."""

from __future__ import annotations

import gzip
import json
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from graphdoctor.errors import ReportError
from graphdoctor.report import gates, io, schema
from graphdoctor.report.diff import compare
from graphdoctor.report.document import Report
from graphdoctor.report.redact import redact
from graphdoctor.report.render.chrome_trace import to_chrome_trace
from graphdoctor.report.render.markdown import render_markdown
from graphdoctor.report.render.text import render_text
from tests.report.helpers import hand_made

pytestmark = pytest.mark.slow  # the second test command (README: Tests)

BASE = hand_made()
BASE_BYTES = io.dumps(BASE)
BASE_DATA = json.loads(BASE_BYTES)

Path = tuple[Any, ...]


def _paths(node: Any, prefix: Path = ()) -> list[Path]:
    """Every place in the JSON document, containers and leaves."""
    found = [prefix] if prefix else []
    if isinstance(node, dict):
        for key, value in node.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _paths(value, (*prefix, index))
    return found


ALL_PATHS = _paths(BASE_DATA)
FIELD_PATHS = [p for p in ALL_PATHS if isinstance(p[-1], str)]  # named fields, not items

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats() | st.text(max_size=12)
    | st.sampled_from([-1, -2, 0, 1, 10**9, "", "1.0", "graphdoctor-report"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                                 max_size=4),
    max_leaves=8)


def _parent(data: Any, path: Path) -> Any:
    for key in path[:-1]:
        data = data[key]
    return data


def _mutate(data: Any, draw: Any) -> None:
    path = draw(st.sampled_from(FIELD_PATHS) | st.sampled_from(ALL_PATHS))
    try:
        parent = _parent(data, path)
        parent[path[-1]]  # noqa: B018 - the path may be gone after an earlier mutation
    except (KeyError, IndexError, TypeError):
        return
    if not isinstance(parent, (dict, list)):
        return  # an earlier mutation turned the container into a string
    action = draw(st.sampled_from(["delete", "replace", "retype", "empty", "duplicate"]))
    if action == "delete":
        del parent[path[-1]]
    elif action == "replace":
        parent[path[-1]] = draw(json_values)
    elif action == "retype":
        value = parent[path[-1]]
        parent[path[-1]] = [value] if not isinstance(value, list) else json.dumps(value)
    elif action == "empty":
        parent[path[-1]] = type(parent[path[-1]])()
    elif isinstance(parent, list):
        parent.append(parent[path[-1]])


def _bump_version(data: dict[str, Any], draw: Any) -> None:
    major = draw(st.integers(0, 3))
    minor = draw(st.integers(0, 99))
    data["schema_version"] = draw(st.sampled_from([f"{major}.{minor}", f"{major}", "x.y", major]))


@st.composite
def damaged_reports(draw: Any) -> bytes:
    """Report bytes with one kind of damage (or a few structural ones)."""
    kind = draw(st.sampled_from(["truncate", "truncate-gzip", "flip-bytes", "structure",
                                 "structure", "structure", "version"]))
    if kind == "truncate":
        return BASE_BYTES[:draw(st.integers(0, len(BASE_BYTES) - 1))]
    if kind == "truncate-gzip":
        packed = gzip.compress(BASE_BYTES, mtime=0)
        return packed[:draw(st.integers(0, len(packed) - 1))]
    if kind == "flip-bytes":
        raw = bytearray(BASE_BYTES)
        for _ in range(draw(st.integers(1, 4))):
            raw[draw(st.integers(0, len(raw) - 1))] = draw(st.integers(0, 255))
        return bytes(raw)
    data = json.loads(BASE_BYTES)
    if kind == "version":
        _bump_version(data, draw)
    for _ in range(draw(st.integers(1, 3))):
        _mutate(data, draw)
    return json.dumps(data).encode()


def _load(raw: bytes) -> Report | None:
    try:
        report = io.loads(raw, "fuzzed")
    except ReportError as error:
        assert str(error).startswith("fuzzed: ") and "\n" not in str(error)
        event("refused")
        return None
    event("loaded")
    return report


@settings(max_examples=10_000, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(damaged_reports())
def test_loading_a_damaged_report_gives_a_report_or_a_clear_error(raw: bytes) -> None:
    report = _load(raw)
    assert report is None or isinstance(report, Report)


@settings(max_examples=1_000, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(damaged_reports())
def test_a_damaged_report_that_loads_can_be_used(raw: bytes) -> None:
    report = _load(raw)
    if report is None:
        return
    assert render_text(report, width=80)
    assert render_markdown(report).startswith("### graphdoctor")
    json.dumps(to_chrome_trace(report), allow_nan=False)
    gates.check(report, gates.CONDITIONS)
    compare(BASE, report)
    io.parse(json.loads(io.dumps(redact(report))))


@settings(max_examples=400, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(damaged_reports())
def test_the_loader_is_at_least_as_strict_as_the_schema(raw: bytes) -> None:
    try:
        data = json.loads(raw)
    except ValueError:
        return
    valid = jsonschema.Draft202012Validator(schema.report_schema()).is_valid(data)
    if not valid:
        assert _load(raw) is None
