"""The records graphdoctor has torch write at DEBUG stay bounded: CUDA graph trees' ``_run``
logs one "Re-recording" per stale graph on every call, and only the first for each graph is
let through; any other line of torch's gets at most MAX_FORCED."""

from __future__ import annotations

import sys
from typing import Any

import pytest

pytest.importorskip("torch")

from graphdoctor.record.compile.compiled import MAX_FORCED, _ForcedRecords  # noqa: E402

TREES = '''
def _run(child, ask):
    first = ask(sys._getframe())  # as torch asks: if log.isEnabledFor(logging.DEBUG):
    return first, ask(sys._getframe())  # and asked again, inside log.debug(...)

def other(ask):
    return ask(sys._getframe())
'''


def torch_like(file: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {"sys": sys}
    exec(compile(TREES, file, "exec"), namespace)  # noqa: S102 - code of the test's own
    return namespace


def test_a_stale_graph_is_logged_once_however_many_calls_check_it() -> None:
    trees, forced = torch_like("/x/torch/_inductor/cudagraph_trees.py"), _ForcedRecords()
    stale, newer = object(), object()
    answers = [trees["_run"](child, forced.allows)
               for child in (stale, stale, stale, newer, stale, newer)]
    yes, no = (True, True), (False, False)
    assert answers == [yes, no, no, yes, no, no]


def test_any_other_line_is_let_through_a_bounded_number_of_times() -> None:
    other, forced = torch_like("/x/torch/_inductor/cudagraph_trees.py")["other"], \
        _ForcedRecords()
    answers = [other(forced.allows) for _ in range(MAX_FORCED + 3)]
    assert answers == [True] * MAX_FORCED + [False] * 3


def test_the_same_function_elsewhere_is_not_taken_for_the_trees_one() -> None:
    run, forced = torch_like("/x/elsewhere.py")["_run"], _ForcedRecords()
    child = object()
    assert [run(child, forced.allows) for _ in range(2)] == [(True, True), (True, True)]
