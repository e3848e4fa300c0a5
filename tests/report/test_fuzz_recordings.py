"""Real recordings and reports, mutated as a stranger could, through every command that reads
them: ``report`` (text, markdown, JSON), ``export``, the viewer's loader, ``diff``, ``merge``
(a job's ranks combined, and the report it writes read back), and ``fix``'s planning.

The recordings are the GPU fixtures of ``fixtures/recordings`` (together they hold every
record kind a recorder writes) and the reports those of ``graphdoctor/demo`` and a job's
ranks. Each example changes a few of their records or fields: a number made huge, negative,
fractional, NaN or infinite; a string made long or hostile; a field dropped, a record
duplicated, retagged, cut short or moved to another recording. Whatever the input, reading it
gives a report or one line of error, and each example runs in a process of its own within a
budget of time and memory (:data:`BUDGET_S`, :data:`BUDGET_BYTES`): a reader that sizes a
list or a loop by a number it read runs out of either.
"""

from __future__ import annotations

import functools
import gzip
import json
import os
import resource
import signal
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from graphdoctor.errors import ReportError
from graphdoctor.fix.files import recorded_files
from graphdoctor.fix.plan import plan
from graphdoctor.report import gates, io
from graphdoctor.report.diff import compare
from graphdoctor.report.opening import open_report
from graphdoctor.report.redact import redact
from graphdoctor.report.render.chrome_trace import to_chrome_trace
from graphdoctor.report.render.diff import render_diff_text
from graphdoctor.report.render.markdown import render_markdown
from graphdoctor.report.render.text import render_text
from graphdoctor.trace.spool.file import read_records
from graphdoctor.tui.report_view import ReportView
from graphdoctor.tui.search import search_items
from tests.conftest import RECORDINGS, ROOT
from tests.hostile import EVERYTHING

pytestmark = pytest.mark.slow  # the second test command (README: Tests)

BUDGET_S = 30  # per example, the reading and every command after it
BUDGET_BYTES = 2 * 2**30  # of address space, the interpreter and its imports included
# Recordings that hold every record kind between them, and a job of two ranks.
SPOOLS = ("cupy_sync_in_capture", "cupy_empty_capture", "freed_input_after_capture",
          "many_private_pools", "memory_growth_replays", "compile_dynamic_shapes",
          "real_graphed_callables_autocast", "dist_healthy_capture.rank0")
JOB = ("dist_healthy_capture.rank0", "dist_healthy_capture.rank1")
REPORTS = (ROOT / "graphdoctor" / "demo" / "item_in_capture.json.gz",
           ROOT / "graphdoctor" / "demo" / "launch_bound.json.gz",
           ROOT / "fixtures" / "jobs" / "two_nodes" / "job.rank0.json.gz")

# What a field may be made into.
HOSTILE_NUMBERS = [10**9, 10**12, 2**62, -(2**62), 2**64 + 1, -1, -(10**9), 0]
leaves = st.one_of(
    st.sampled_from(HOSTILE_NUMBERS), st.integers(-(2**70), 2**70),
    st.sampled_from([float("nan"), float("inf"), float("-inf"), 1e308, -0.0, 0.5]),
    st.floats(), st.text(max_size=20), st.sampled_from(["", "x" * 20_000, EVERYTHING]),
    st.none(), st.booleans(), st.just([]), st.just({}),
    st.lists(st.sampled_from(HOSTILE_NUMBERS), max_size=6))


@functools.cache
def recording(name: str) -> tuple[tuple[Any, ...], ...]:
    """The records of a fixture recording, as JSON arrays (frozen: each example copies)."""
    return tuple(tuple(r) for r in read_records(RECORDINGS / f"{name}.spool.jsonl.gz"))


@functools.cache
def report_data(path: Path) -> str:
    return json.dumps(json.loads(gzip.decompress(path.read_bytes())))


Path_ = tuple[Any, ...]


def places(value: Any, prefix: Path_ = ()) -> list[Path_]:
    """Every place in a JSON value, containers and leaves."""
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            found += places(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += places(item, (*prefix, index))
    return found


def mutate(value: Any, draw: Callable[[Any], Any]) -> None:
    """One change at one place of ``value``: replaced, dropped, emptied or doubled."""
    found = places(value)
    if not found:
        return
    where = draw(st.sampled_from(found))
    parent = value
    for key in where[:-1]:
        parent = parent[key]
    action = draw(st.sampled_from(["replace", "replace", "replace", "drop", "double"]))
    if action == "replace":
        parent[where[-1]] = draw(leaves)
    elif action == "drop":
        del parent[where[-1]]
    elif isinstance(parent, list):
        parent.extend([parent[where[-1]]] * draw(st.integers(1, 50)))
    else:
        parent[where[-1]] = [parent[where[-1]]] * 2


@st.composite
def mutated_spool(draw: Callable[[Any], Any], name: str | None = None) -> Mutated:
    """A fixture recording with a few of its records changed (see the module doc)."""
    name = name or draw(st.sampled_from(SPOOLS))
    records = [list(r) for r in recording(name)]
    for _ in range(draw(st.integers(1, 4))):
        index = draw(st.integers(0, len(records) - 1))
        kind = draw(st.sampled_from(["field", "field", "field", "retag", "duplicate",
                                     "elsewhere", "drop"]))
        event(kind)
        record = json.loads(json.dumps(records[index]))
        if kind == "field":
            mutate(record, draw)
        elif kind == "retag":
            record[0] = draw(st.sampled_from([r[0] for r in recording(draw(st.sampled_from(
                SPOOLS)))]))
        elif kind == "duplicate":
            records[index:index] = [record] * draw(st.integers(1, 100))
        elif kind == "elsewhere":  # a record of another recording, changed
            other = recording(draw(st.sampled_from(SPOOLS)))
            record = json.loads(json.dumps(other[draw(st.integers(0, len(other) - 1))]))
            mutate(record, draw)
        if kind == "drop":
            del records[index]
        elif kind != "duplicate":
            records[index] = record
    text = "".join(json.dumps(r) + "\n" for r in records).encode()  # NaN written as NaN
    cut = draw(st.one_of(st.none(), st.integers(0, len(text))))
    text = text if cut is None else text[:cut]
    return Mutated(gzip.compress(text, mtime=0) if draw(st.booleans()) else text)


@st.composite
def mutated_report(draw: Callable[[Any], Any]) -> Mutated:
    data = json.loads(report_data(draw(st.sampled_from(REPORTS))))
    for _ in range(draw(st.integers(1, 4))):
        mutate(data, draw)
    return Mutated(json.dumps(data).encode())


class Mutated(bytes):
    """A mutated file, shown short when an example fails (the file is kept: see
    :func:`within_budget`)."""

    def __repr__(self) -> str:
        return f"<{len(self):,} bytes: {bytes(self[:200])!r}...>"


def read_everything(paths: list[Path]) -> str:
    """What each reading command does with the files: open (one report, or a job's ranks
    combined), show, export, diff, gate, plan fixes, redact, load in the viewer, and write
    the report that merge writes, then read that back. "refused" or "read"."""
    try:
        report = open_report(paths).report
    except ReportError as error:
        assert "\n" not in str(error), str(error)
        return "refused"
    render_text(report, width=80)
    render_markdown(report)
    json.dumps(to_chrome_trace(report), allow_nan=False)
    render_diff_text(compare(report, report, "a", "b"), width=80)
    gates.check(report, gates.CONDITIONS)
    plan(report, recorded_files(report))
    io.loads(io.dumps(redact(report)))
    view = ReportView(report)
    view.prepare_timeline(120)
    assert view.graph_rows is not None and search_items(view) is not None
    for grouping in ("phase", "pool", "site"):
        view.alloc_groups(grouping)
    io.loads(io.dumps(report), "merged")  # what merge writes opens again
    return "read"


def within_budget(paths: list[Path]) -> str:
    """:func:`read_everything` in a child process held to BUDGET_S and BUDGET_BYTES; what it
    said ("refused" or "read"); fail with what went wrong there, and where the files are."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read)
        code = 0
        try:
            resource.setrlimit(resource.RLIMIT_AS, (BUDGET_BYTES, BUDGET_BYTES))
            signal.alarm(BUDGET_S)
            os.write(write, read_everything(paths).encode())
        except BaseException:  # noqa: BLE001 - everything is reported to the parent
            os.write(write, traceback.format_exc()[-6000:].encode(errors="replace"))
            code = 1
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as said:
        text = said.read().decode(errors="replace")
    _, status = os.waitpid(pid, 0)
    kept = f"the files: {', '.join(map(str, paths))}"
    if os.WIFSIGNALED(status):
        pytest.fail(f"killed by signal {os.WTERMSIG(status)} (SIGALRM: past {BUDGET_S} s); "
                    f"{kept}")
    assert os.WEXITSTATUS(status) == 0, f"{text}\n{kept}"
    return text


FUZZ = settings(deadline=None, database=None, max_examples=150,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])


@FUZZ
@given(mutated_spool())
def test_a_mutated_recording_is_read_within_budget(tmp_path: Path, data: bytes) -> None:
    spool = tmp_path / "fuzzed.spool"
    spool.write_bytes(data)
    event(within_budget([spool]))


@settings(FUZZ, max_examples=60)
@given(st.data())
def test_a_job_with_a_mutated_rank_is_combined_within_budget(tmp_path: Path,
                                                             data: st.DataObject) -> None:
    first = tmp_path / "job.rank0.spool"
    first.write_bytes(data.draw(mutated_spool(JOB[0])))
    rest = [RECORDINGS / f"{name}.spool.jsonl.gz" for name in JOB[1:]]
    event(within_budget([first, *rest]))


@settings(FUZZ, max_examples=100)
@given(mutated_report())
def test_a_mutated_report_is_read_within_budget(tmp_path: Path, data: bytes) -> None:
    report = tmp_path / "fuzzed.json"
    report.write_bytes(data)
    event(within_budget([report]))


def every_number(value: Any, place: Path_ = ()) -> list[Path_]:
    """The places of the ints in a record (not its bools)."""
    if type(value) is int:
        return [place]
    items = value.items() if isinstance(value, dict) else \
        enumerate(value) if isinstance(value, (list, tuple)) else ()
    return [found for key, item in items for found in every_number(item, (*place, key))]


def each_number_of_each_kind() -> list[tuple[str, int, Path_]]:
    """(recording, record, place) for one number at each place of each record kind the
    recordings hold (a record's tag and the place's shape, list indices aside)."""
    found: dict[tuple[Any, ...], tuple[str, int, Path_]] = {}
    for name in SPOOLS:
        for index, record in enumerate(recording(name)):
            for place in every_number(list(record)):
                shape = (record[0], *(k if isinstance(k, str) else "#" for k in place))
                found.setdefault(shape, (name, index, place))
    return list(found.values())


@pytest.mark.parametrize("number", [10**9, 2**62, -(2**62)])
def test_every_number_of_every_record_kind_made_huge_is_read_within_budget(
        tmp_path: Path, number: int) -> None:
    """Not left to chance: each number a recorder writes, in each kind of record, made huge
    or hugely negative in turn (an id, a count, a time, a size, a world's size...)."""
    for name, index, place in each_number_of_each_kind():
        records = [json.loads(json.dumps(r)) for r in recording(name)]
        record: Any = records[index]
        for key in place[:-1]:
            record = record[key]
        record[place[-1]] = number
        spool = tmp_path / f"{name}.{index}.spool"
        spool.write_text("".join(json.dumps(r) + "\n" for r in records))
        within_budget([spool])
        spool.unlink()
