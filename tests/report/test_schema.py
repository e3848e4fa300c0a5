"""The shipped JSON Schema describes every report graphdoctor writes, exactly."""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any

import jsonschema
import pytest

from graphdoctor.diagnose.findings import Evidence, Finding, Location, Verdict
from graphdoctor.report import schema
from graphdoctor.report.document import SCHEMA_VERSION, BaselineRun, to_json
from graphdoctor.report.io import loads
from graphdoctor.report.redact import redact
from graphdoctor.trace import model
from tests.report.helpers import NAMES, hand_made, plain, real

SCHEMA = schema.report_schema()


def strict(node: Any) -> Any:
    """The schema with every described object closed (additionalProperties: false), so a
    field the writer emits but the schema does not describe fails validation."""
    if isinstance(node, dict):
        node = {key: strict(value) for key, value in node.items()}
        if "properties" in node and "additionalProperties" not in node:
            node["additionalProperties"] = False
        return node
    if isinstance(node, list):
        return [strict(item) for item in node]
    return node


STRICT = strict(SCHEMA)


def test_schema_is_valid_json_schema_2020_12() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"].endswith("2020-12/schema")


def test_schema_uses_only_keywords_the_loader_enforces() -> None:
    used: set[str] = set()

    def walk(node: Any, in_names: bool = False) -> None:
        if isinstance(node, dict):
            if not in_names:
                used.update(node)
            for key, value in node.items():
                walk(value, in_names=key in ("properties", "$defs") and not in_names)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(SCHEMA)
    assert used - schema.SUPPORTED_KEYWORDS == set()


@pytest.mark.parametrize("name", NAMES)
def test_every_fixture_report_follows_the_schema_exactly(name: str) -> None:
    data = plain(real(name))
    jsonschema.validate(data, STRICT, cls=jsonschema.Draft202012Validator)
    schema.check(data)  # the loader's own check agrees


@pytest.mark.parametrize("name", NAMES)
def test_redacted_reports_follow_the_schema(name: str) -> None:
    jsonschema.validate(plain(redact(real(name))), STRICT, cls=jsonschema.Draft202012Validator)


def test_hand_made_diagnosis_follows_the_schema() -> None:
    data = plain(hand_made())
    assert data["diagnosis"]["findings"][0]["measurements"] == {"syncs": 1,
                                                                "replay": {"median_us": 1.5}}
    jsonschema.validate(data, STRICT, cls=jsonschema.Draft202012Validator)


@pytest.mark.parametrize("name", NAMES)
def test_a_report_survives_the_round_trip(name: str) -> None:
    data = plain(real(name))
    again = to_json(loads(json.dumps(data).encode()))
    assert json.loads(json.dumps(again)) == data


def _schema_fields(definition: str) -> set[str]:
    return set(SCHEMA["$defs"][definition]["properties"])


@pytest.mark.parametrize(("cls", "definition"), [
    (model.Meta, "meta"), (model.RunStatus, "status"), (model.Graph, "graph"),
    (model.Function, "function"), (model.ExceptionRecord, "exception"),
    (model.ErrorLink, "error_link"), (model.CompileEvent, "compile_event"),
    (model.WarningRecord, "warning"), (model.InputEvent, "input_event"),
    (model.Device, "device"), (model.Note, "note"), (model.TeardownEvent, "teardown_event"),
    (Finding, "finding"), (BaselineRun, "baseline_run"),
    (Verdict, "verdict"), (Evidence, "evidence"), (Location, "location"),
])
def test_schema_describes_every_field_of_the_model(cls: type, definition: str) -> None:
    assert {f.name for f in dataclasses.fields(cls)} == _schema_fields(definition)


def test_schema_describes_every_part_of_the_trace() -> None:
    parts = set(SCHEMA["$defs"]["trace"]["properties"])
    assert {f.name for f in dataclasses.fields(model.Trace)} | {"version", "strings"} == parts


def test_schema_describes_every_table_column() -> None:
    tables = SCHEMA["$defs"]["trace"]["properties"]["tables"]["properties"]
    assert set(tables) == set(model.TABLE_ROWS)
    for name, row in model.TABLE_ROWS.items():
        columns = {c for c in tables[name]["properties"] if not c.endswith("@s")}
        assert columns == set(row._fields), name


def test_schema_version_in_file_and_code_agree() -> None:
    major = SCHEMA_VERSION.split(".")[0]
    assert SCHEMA["$id"] == f"urn:graphdoctor:report-schema:{major}"


@pytest.mark.parametrize(("path", "value", "place"), [
    (("trace", "graphs", 0, "id"), "zero", "report.trace.graphs[0].id"),
    (("trace", "tables", "replays", "t"), [1, "2"], "report.trace.tables.replays.t[1]"),
    (("trace", "frames", 0), [0, 1], "report.trace.frames[0]"),
    (("diagnosis", "findings"), {}, "report.diagnosis.findings"),
    (("trace", "meta"), None, "report.trace.meta"),
])
def test_a_violation_names_its_place(path: tuple[Any, ...], value: Any, place: str) -> None:
    data = copy.deepcopy(plain(real("launch_bound")))
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(schema.SchemaViolation, match=place.replace("[", r"\[").replace(".", r"\.")):
        schema.check(data)


@pytest.mark.parametrize("mutate", [
    lambda d: d["trace"]["stacks"].append([len(d["trace"]["frames"])]),
    lambda d: d["trace"]["frames"].append([len(d["trace"]["strings"]), 1, 0, 0]),
    lambda d: d["trace"]["tables"]["allocs"]["action"].__setitem__(0, 10**6),
    lambda d: d["trace"]["tables"]["allocs"]["addr"].pop(),
    lambda d: d["trace"]["tables"]["allocs"].pop("action@s"),  # text read as numbers
    lambda d: d["trace"]["tables"]["allocs"].__setitem__("addr@s", []),  # numbers as text
])
def test_references_outside_their_tables_are_refused(mutate: Any) -> None:
    data = copy.deepcopy(plain(real("launch_bound")))
    mutate(data)
    jsonschema.validate(data, SCHEMA)  # the schema alone cannot see these
    with pytest.raises(schema.SchemaViolation):
        schema.check(data)


def test_a_replay_count_is_keyed_by_a_graph_id() -> None:
    data = copy.deepcopy(plain(real("launch_bound")))
    data["trace"]["replay_counts"] = {"0": 3, "-1": 1}
    schema.check(data)
    data["trace"]["replay_counts"]["graph zero"] = 3
    with pytest.raises(schema.SchemaViolation, match=r"report\.trace\.replay_counts"):
        schema.check(data)


def test_the_shipped_tables_are_what_the_rows_declare() -> None:
    """No hand-kept copy: `python -m graphdoctor.report.schema_tables` writes them."""
    from graphdoctor.report.schema_tables import tables

    shipped = SCHEMA["$defs"]["trace"]["properties"]["tables"]["properties"]
    assert shipped == tables()
