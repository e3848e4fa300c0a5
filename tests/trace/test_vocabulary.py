"""The spool's records and the trace's event kinds are declared once; these tests catch a
declaration that drifted from its readers or its rows."""

from __future__ import annotations

import ast
import dataclasses
import typing
from pathlib import Path

import pytest

from graphdoctor.trace import event_kinds
from graphdoctor.trace.assemble import assemble
from graphdoctor.trace.event_kinds import Alloc
from graphdoctor.trace.handlers import HANDLERS
from graphdoctor.trace.model import Trace
from graphdoctor.trace.spool import records as spool_records
from graphdoctor.trace.spool.records import RECORDS, TAGS, SpoolDrift, decode, encode

SAMPLES = {int: 7, str: "x", bool: True, "JsonObject": {"id": 1, "t": 2}}


def sample(record_type: type[tuple[object, ...]]) -> tuple[object, ...]:
    """A record of the type with a plausible value in each field."""
    hints = typing.get_type_hints(record_type)
    values = [SAMPLES.get(typing.get_origin(h) or h, [] if typing.get_origin(h) is list
                          else {"id": 1, "t": 2}) for h in hints.values()]
    return record_type(*values)


def test_each_tag_names_one_record_and_each_record_has_a_handler() -> None:
    assert len(RECORDS) == len(TAGS)
    assert set(HANDLERS) == set(TAGS)


@pytest.mark.parametrize("record_type", list(TAGS), ids=list(TAGS.values()))
def test_records_round_trip_through_their_json_array(record_type: type[tuple[object, ...]]) -> None:
    record = sample(record_type)
    raw = encode(record)
    assert raw[0] == TAGS[record_type]
    written = spool_records.WRITTEN.get(record_type, len(record))
    assert decode(raw) == (*record[:written], *([""] if written < len(record) else []))


def test_a_field_added_later_decodes_from_an_older_spool_with_its_default() -> None:
    older = ["alloc", 1, "alloc", 4096, 512, 0, "default", -1, -1]  # before "device"
    assert decode(older) == Alloc(1, "alloc", 4096, 512, 0, "default", -1, -1, device=0)


def test_a_field_a_newer_recorder_writes_never_lands_where_assembly_writes() -> None:
    newer = ["sync", 1, "item", 0, -1, 0, -1, "a field added after stack"]
    assert decode(newer).phase == ""  # type: ignore[union-attr]


def test_fields_a_newer_recorder_added_are_dropped() -> None:
    assert decode(["untimed", 3, "later"]) == spool_records.Untimed(3)


@pytest.mark.parametrize("raw", [["sync", 1, "item"], ["no_such_tag", 1]])
def test_drift_is_an_error_that_names_the_tag(raw: list[object]) -> None:
    with pytest.raises(SpoolDrift, match=str(raw[0])):
        decode(raw)


def test_assembly_names_the_tags_it_could_not_read() -> None:
    trace = assemble([["sync", 1, "item"], ["from_the_future", 1], ["untimed", 2]])
    notes = " ".join(note.why for note in trace.meta.not_recorded)
    assert "from_the_future" in notes and "sync" in notes


@pytest.mark.parametrize("kind", event_kinds.COLUMNAR, ids=lambda k: k.name)
def test_a_recorded_row_is_its_record_written_but_for_its_phase(
        kind: event_kinds.EventKind) -> None:
    """One declaration: the recorder writes the row, and the phase assembly fills is last."""
    if not kind.tag:  # collectives: begin and end records make one row
        assert kind.name in ("collectives",)
        return
    assert spool_records.RECORDS[kind.tag] is kind.row
    assert (kind.fields[-1] == "phase") == kind.phased
    assert len(encode(sample(kind.row))) == 1 + kind.written


def test_every_kind_lives_where_it_says() -> None:
    trace = Trace()
    assert set(trace.tables) == {k.name for k in event_kinds.COLUMNAR}
    for kind in event_kinds.LISTED:
        assert isinstance(getattr(trace, kind.name), list)
        assert dataclasses.is_dataclass(kind.row)
    names = [k.name for k in event_kinds.KINDS]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("kind", event_kinds.KINDS, ids=lambda k: k.name)
def test_every_kind_is_named_and_sortable(kind: event_kinds.EventKind) -> None:
    assert kind.label
    assert not kind.sort or kind.sort in kind.fields


def test_the_recorder_writes_only_declared_records() -> None:
    """No list literal tagged by hand reaches the spool (mypy checks the types as well)."""
    root = Path(__file__).parents[2] / "graphdoctor"
    sources = [*root.joinpath("record").rglob("*.py"), *root.joinpath("launch").rglob("*.py")]
    raw = [f"{path.name}:{node.lineno}" for path in sources
           for node in ast.walk(ast.parse(path.read_text()))
           if isinstance(node, ast.List) and node.elts and isinstance(node.elts[0], ast.Constant)
           and node.elts[0].value in RECORDS]
    assert sources and raw == []
