"""The known-errors table, a test per row: each row's pattern matches torch's own words for
its error (as a GPU printed them: known_error_messages.json, or a committed recording's
first error) and fills in its fix; the failure rules give that fix; an error no row knows
keeps its rule's own words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphdoctor.diagnose import known_errors
from graphdoctor.diagnose.known_errors import KNOWN_ERRORS
from graphdoctor.diagnose.rules import gd108_exception_in_capture
from graphdoctor.trace.model import ErrorLink, Frame
from tests.reports import report_for, traces_for

MESSAGES = json.loads((Path(__file__).parent / "known_error_messages.json").read_text())
# NCCL's watchdog in a capture no longer fails on torch 2.11 (the table's GPU run above:
# case nccl_async_error_handling raised nothing); its words as users reported them on
# torch 2.0 (NVIDIA/physicsnemo-sym#47), the first line of the error log
WATCHDOG = ("[Rank 10] NCCL watchdog thread terminated with exception: CUDA error: operation "
            "not permitted when stream is capturing")


def probed(case: str) -> str:
    """The message a case of the GPU run raised."""
    [found] = [c for c in MESSAGES["cases"] if c["case"] == case]
    return str(found["results"][0]["message"])


def first_error(scenario: str) -> tuple[ErrorLink, list[Frame]]:
    """A recording's first error of its failed capture, with its stack."""
    trace = traces_for(scenario)[0]
    link = trace.exceptions[0].chain[0]
    return link, trace.stack(link.stack)


def row_of(link: ErrorLink, frames: list[Frame] | None = None) -> tuple[str, dict[str, str]]:
    found = known_errors.known(link, frames or [])
    assert found is not None, link.message
    return found[0].name, found[1]


CASES = {
    "optimizer-not-capturable": lambda: ErrorLink("RuntimeError",
                                                  probed("optimizer_not_capturable")),
    "nccl-watchdog-in-capture": lambda: ErrorLink("RuntimeError", WATCHDOG),
    "seed-in-capture": lambda: ErrorLink("RuntimeError", probed("manual_seed")),
    "generator-not-registered": lambda: ErrorLink("RuntimeError", probed("new_generator")),
    "cublas-init-in-capture": lambda: first_error("cublas_init_in_capture")[0],
    "cudnn-in-capture": lambda: first_error("cudnn_benchmark_in_capture")[0],
    "not-permitted-while-capturing": lambda: first_error("dist_barrier_in_capture")[0],
}


def test_every_row_has_a_case() -> None:
    assert [row.name for row in KNOWN_ERRORS] == list(CASES)


@pytest.mark.parametrize("name", list(CASES))
def test_row_matches_torchs_own_words(name: str) -> None:
    assert row_of(CASES[name]())[0] == name


def test_optimizer_row_names_the_class() -> None:
    row, words = row_of(CASES["optimizer-not-capturable"]())
    [table_row] = [r for r in KNOWN_ERRORS if r.name == row]
    assert words["optimizer"] == "Adam"
    assert "torch.optim.Adam(params, ..., capturable=True)" in known_errors.say(table_row.fix,
                                                                            words)


def test_torch_manual_seed_and_cuda_manual_seed_say_the_same() -> None:
    assert probed("manual_seed") == probed("cuda_manual_seed")


def test_not_permitted_row_names_the_call_that_raised() -> None:
    link, frames = first_error("dist_barrier_in_capture")
    assert row_of(link, frames)[1]["op"] == "barrier()"


def test_watchdog_row_comes_before_the_plain_not_permitted_one() -> None:
    assert row_of(ErrorLink("RuntimeError", WATCHDOG))[0] == "nccl-watchdog-in-capture"


def test_an_unknown_error_keeps_the_rules_own_words() -> None:
    assert known_errors.known(ErrorLink("ValueError", "shapes do not match"), []) is None
    [finding] = [f for f in report_for("exception_in_capture").diagnosis.findings
                 if f.id == gd108_exception_in_capture.ID]
    assert finding.fix == gd108_exception_in_capture.FIX


@pytest.mark.parametrize(("scenario", "rule", "words"), [
    ("real_adam_default_capture", "GD108", "capturable=True"),
    ("cudnn_benchmark_in_capture", "GD110", "cudnn.benchmark"),
    ("cublas_init_in_capture", "GD110", "cuBLAS sets up its handle"),
    ("rng_generator_in_capture", "GD106", "register_generator_state(gen)"),
    ("dist_barrier_in_capture", "GD101", "Move barrier() out of the captured code"),
])
def test_the_failure_rules_give_the_tables_fix(scenario: str, rule: str, words: str) -> None:
    fixes = [f.fix for f in report_for(scenario).diagnosis.findings if f.id == rule]
    assert fixes and all(words in fix for fix in fixes), fixes



def test_the_watchdog_rows_gap_is_bounded() -> None:
    # a stranger's text: an open gap would backtrack over all of it from each prefix
    near = WATCHDOG.replace("exception: ", "exception: " + "x" * 300)
    far = WATCHDOG.replace("exception: ", "exception: " + "x" * 1000)
    assert row_of(ErrorLink("RuntimeError", near))[0] == "nccl-watchdog-in-capture"
    assert row_of(ErrorLink("RuntimeError", far))[0] == "not-permitted-while-capturing"
