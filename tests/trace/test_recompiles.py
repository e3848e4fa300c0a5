"""Recompiles read from torch's own texts (tests/recompile_texts.py: torch 2.13.0+cpu):
the guard that failed, the user's name for what it guards, what changed, the cause that
decides the fix, the user's line, and the compile time each recompile cost."""

from __future__ import annotations

from typing import Any

import pytest

from graphdoctor.trace.assemble import assemble
from graphdoctor.trace.names import (
    INPUT_SHAPE,
    OTHER_GUARD,
    OTHER_OBJECT,
    REALLOCATED_TENSOR,
    RECOMPILE,
    SPECIALISED_VALUE,
)
from graphdoctor.trace.torch_logs import compile_logs, guards
from tests import recompile_texts as texts

LOGGER = "torch._dynamo.guards.__recompiles"
K_CACHE = "self.layers[0].attention.kv_cache.k_cache"


def test_a_reallocated_module_buffer_is_named_as_the_user_writes_it() -> None:
    parsed = compile_logs.parse(LOGGER, texts.LOG_REALLOC)
    assert parsed is not None and parsed["kind"] == RECOMPILE
    assert parsed["function"] == "forward" and parsed["key"] == K_CACHE
    assert parsed["reason"].endswith("size mismatch at index 2. expected 16, actual 32")
    # no user line in the text: the compiled function is where it points
    assert parsed["frames"] == [("/tmp/rc/buf.py", 24, "forward")]
    failure = guards.read_failure(guards.reasons_in_log(texts.LOG_REALLOC)[0])
    assert (failure.entry, failure.cause, failure.dim, failure.change) == (
        "0/1", REALLOCATED_TENSOR, 2, "16 → 32")


def test_a_value_guard_points_at_the_line_torch_quotes() -> None:
    parsed = compile_logs.parse(LOGGER, texts.LOG_POS)
    assert parsed is not None and parsed["reason"] == "pos == 0" and parsed["key"] == "pos"
    assert parsed["frames"][-1] == ("/tmp/rc/buf.py", 17, "forward")
    failure = guards.read_failure(guards.reasons_in_log(texts.LOG_POS)[0])
    assert failure.cause == SPECIALISED_VALUE and failure.change == "== 0"
    assert failure.code == "self.kv_cache.k_cache[:, :, pos] = self.wk(x)"


def test_the_latest_compiles_failure_is_the_reason_and_every_reason_is_kept() -> None:
    reasons = guards.reasons_in_log(texts.LOG_POS_AFTER_REALLOC)
    assert [guards.read_failure(r).entry for r in reasons] == ["0/4", "0/3", "0/2", "0/1", "0/0"]
    assert "User stack trace:" in reasons[-1] and reasons[-1].count("File ") == 2
    first = guards.primary([guards.read_failure(r) for r in reversed(reasons)])
    assert first is not None and first.entry == "0/4" and first.name == "pos"
    # its own text names no user stack, but its comment's abbreviated file is the function's
    parsed = compile_logs.parse(LOGGER, texts.LOG_POS_AFTER_REALLOC)
    assert parsed is not None and parsed["frames"][-1] == ("/tmp/rc/buf.py", 17, "forward")
    assert parsed["detail"] == "\n".join(reasons)


def test_the_log_and_the_recorders_reasons_read_the_same() -> None:
    from_log = [guards.read_failure(r) for r in guards.reasons_in_log(texts.LOG_SHAPE)]
    assert [f.guard for f in from_log] == ["tensor 'x' size mismatch at index 0. expected 4, "
                                           "actual 8", "n == 1"]
    assert [(f.cause, f.name) for f in from_log] == [(INPUT_SHAPE, "x"),
                                                     (SPECIALISED_VALUE, "n")]
    assert from_log[1].frames == (("/tmp/rc/intarg.py", 4, "f"),)


def test_torch_2_11_says_it_the_same_way() -> None:
    parsed = compile_logs.parse(LOGGER, texts.LOG_211_REALLOC)
    assert parsed is not None and parsed["key"] == "model.layers[0].attention.kv_cache.k_cache"
    assert parsed["frames"] == [("/tmp/s.py", 56, "decode_step")]
    failures = [guards.read_failure(r) for r in texts.REASONS_211_REALLOC]
    first = guards.primary(failures)
    assert first is not None and (first.entry, first.change) == ("0/2", "112 → 144")
    assert {f.cause for f in failures} == {REALLOCATED_TENSOR}


@pytest.mark.parametrize(("index", "cause", "name", "change"), [
    (0, REALLOCATED_TENSOR, "cache", "4 → 6"),  # tensor 'G['cache']': a re-assigned global
    (1, REALLOCATED_TENSOR, "self.buf", "4 → 6"),  # a plain attribute, not a buffer
    (2, OTHER_OBJECT, "static", "<class 'torch.Tensor'>"),  # mark_static_address(guard=True)
    (3, OTHER_GUARD, "x", "Float → Double"),  # dtype
    (4, SPECIALISED_VALUE, "mode", "== 'a'"),
    (5, OTHER_OBJECT, "fn", "<class 'builtin_function_or_method'>"),
])
def test_each_kind_of_guard_has_its_cause(index: int, cause: str, name: str,
                                          change: str) -> None:
    failure = guards.read_failure(texts.REASONS_VARIETY[index][0])
    assert (failure.cause, failure.name, failure.change) == (cause, name, change)


@pytest.mark.parametrize(("source", "name", "owned"), [
    ("self._modules['layers']._modules['0']._modules['attention']._modules['kv_cache']"
     "._buffers['k_cache']", K_CACHE, True),
    # the wording of torch 2.11 on an H100, quoted in issue 11
    ("model._modules['layers']._modules['0']._modules['attention']._modules['kv_cache']"
     "._buffers['k_cache']", "model.layers[0].attention.kv_cache.k_cache", True),
    ("L['self']._parameters['weight']", "self.weight", True),  # before 2.6: L[...] scope
    ("L['x']", "x", False), ("G['cache']", "cache", True), ("args[0]", "args[0]", False),
])
def test_user_names(source: str, name: str, owned: bool) -> None:
    assert guards.user_name(source) == name and guards.owned(source) == owned


def _spool(*extra: list[Any]) -> list[list[Any]]:
    """A CPU run's records: the script's frame, and dynamo's compile spans 0/0 to 0/2."""
    return [["hello", {"version": 1, "target": "buf.py"}],
            ["frame", 0, "/tmp/rc/buf.py", 33, "<module>", "user"], ["stack", 0, [0]],
            ["compile_cb", 100, "compile_start", "DYNAMO", "0/0", 0],
            ["compile_cb", 900, "compile_end", "DYNAMO", "0/0", -1],
            ["compile_cb", 1000, "compile_start", "DYNAMO", "0/1", 0],
            ["compile_cb", 1300, "compile_end", "DYNAMO", "0/1", -1],
            ["compile_cb", 1400, "compile_start", "CUDAGRAPH_RECORDING", "0/1", 0],
            ["compile_cb", 1450, "compile_end", "CUDAGRAPH_RECORDING", "0/1", -1],
            *extra]


def test_a_recorded_recompile_carries_its_guard_line_and_compile_time() -> None:
    trace = assemble(_spool(["guards", 1010, "0/1", "forward", "/tmp/rc/buf.py", 24,
                             texts.REASONS_BUF[0], 0]))
    [event] = [e for e in trace.compile_events if e.kind == RECOMPILE]
    assert (event.compile_id, event.key, event.reason) == ("0/1", "pos", "pos == 0")
    assert event.dur == 300  # its compile span, not the graph recording after it
    frames = [(f.file, f.line) for f in trace.stack(event.stack)]
    assert frames == [("/tmp/rc/buf.py", 33), ("/tmp/rc/buf.py", 24), ("/tmp/rc/buf.py", 25),
                      ("/tmp/rc/buf.py", 17)]  # the call, the function, torch's user stack


def test_the_recorders_reasons_replace_the_same_recompiles_log_line() -> None:
    trace = assemble(_spool(
        ["log", 1005, LOGGER, "DEBUG", texts.LOG_POS, "0/1", -1],
        ["guards", 1010, "0/1", "forward", "/tmp/rc/buf.py", 24, texts.REASONS_BUF[0], 0]))
    assert [(e.t, e.compile_id) for e in trace.compile_events if e.kind == RECOMPILE] == [
        (1010, "0/1")]


def test_a_recompile_seen_only_in_the_log_still_gets_its_cost() -> None:
    trace = assemble(_spool(["log", 1005, LOGGER, "DEBUG", texts.LOG_POS, "0/1", -1]))
    [event] = [e for e in trace.compile_events if e.kind == RECOMPILE]
    assert event.dur == 300 and event.key == "pos"


def test_without_compile_ids_a_recompile_costs_the_compile_span_it_fell_in() -> None:
    """Before 2.8 the compile callbacks carry no compile id (nor does the recompile)."""
    trace = assemble([["compile_cb", 100, "compile_start", "", "", 0],
                      ["guards", 110, "", "f", "/tmp/rc/intarg.py", 3, texts.REASONS_BUF[0], 0],
                      ["compile_cb", 400, "compile_end", "", "", -1]])
    [event] = [e for e in trace.compile_events if e.kind == RECOMPILE]
    assert event.dur == 300


def test_a_compile_that_never_ended_keeps_its_compile_id() -> None:
    trace = assemble([["compile_cb", 5, "compile_start", "DYNAMO", "0/3", -1]])
    assert [e.compile_id for e in trace.compile_events] == ["0/3"]


def test_a_dynamic_sizes_range_guard_is_an_input_shape() -> None:
    # torch 2.11 on an H200 (fixtures/recordings/real_tv_compile_batch_sizes): a batch of 1
    # after the batch dimension went dynamic (torch always specialises sizes 0 and 1)
    failure = guards.read_failure("0/1: 2 <= L['x'].size()[0] <= 65535")
    assert (failure.cause, failure.name, failure.dim, failure.change) == (
        INPUT_SHAPE, "x", 0, "2 to 65535")
