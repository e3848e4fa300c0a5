"""Identical findings fold into one: the same cudagraph skip logged at every call is one
finding with a count and the times of the first and the last, in every report format."""

from __future__ import annotations

import json
from typing import Any

import jsonschema

from graphdoctor.diagnose import diagnose
from graphdoctor.diagnose.engine import fold
from graphdoctor.diagnose.findings import Evidence, Finding, Location
from graphdoctor.diagnose.view import TraceView
from graphdoctor.report.document import build, to_json
from graphdoctor.report.io import loads
from graphdoctor.report.render import markdown, text
from graphdoctor.trace.assemble import assemble
from graphdoctor.trace.model import Trace
from tests.report.test_schema import STRICT

S = 1_000_000_000
SCRIPT = "/work/main/fixtures/scripts/compile_mutated_input.py"
# torch 2.11.0+cu130's words, as fixtures/recordings/compile_mutated_input recorded them
SKIP = ("skipping cudagraphs due to mutated inputs (1 instances). Found from : \n"
        f'   File "{SCRIPT}", line 10, in step\n'
        "    counts[0] += 1  # the culprit: in-place write to a tensor the graph does not own\n")


def skipped_at_every_call(calls: int = 40) -> Trace:
    """The skip logged once per call (as a real run did), a second apart from 1 s on."""
    logs: list[list[Any]] = [["log", S * (1 + i), "torch._inductor.cudagraph_utils.__cudagraphs",
                              "WARNING", SKIP, "", -1] for i in range(calls)]
    return assemble([["hello", {"version": 1, "target": SCRIPT}], *logs,
                     ["end", {"exit_code": 0}],
                     ["run_end", {"exit_code": 0, "reason": "exited", "wall_ns": 50 * S}]])


def test_forty_identical_skips_are_one_finding_with_a_count_and_its_times() -> None:
    diagnosis = diagnose(skipped_at_every_call(), strict=True)
    [skip] = [f for f in diagnosis.findings if f.name == "cudagraph-skipped"]
    assert (skip.count, skip.first_t, skip.last_t) == (40, S, 40 * S)
    assert len(skip.evidence) == 40
    assert len([v for v in diagnosis.verdicts if v.kind == "skipped"]) == 1


def test_the_reports_say_how_many_and_when() -> None:
    trace = skipped_at_every_call()
    report = build(trace, diagnose(trace), read_line=lambda file, line: "")
    suffix = "(×40, first at 1 s, last at 40 s)"
    assert suffix in text.render_text(report, width=200)
    assert suffix in markdown.render_markdown(report)
    data = json.loads(json.dumps(to_json(report)))
    jsonschema.validate(data, STRICT, cls=jsonschema.Draft202012Validator)
    again = loads(json.dumps(data).encode()).diagnosis.findings
    assert [(f.count, f.first_t, f.last_t) for f in again if f.count > 1] == [(40, S, 40 * S)]


def finding(title: str, line: int, evidence: int) -> Finding:
    return Finding("GD999", "made-up", "warning", "neutral", title, "", "",
                   evidence=(Evidence("compile_events", evidence),),
                   location=Location("/u/t.py", line))


def test_only_the_same_rule_title_and_line_fold() -> None:
    trace = skipped_at_every_call(3)
    folded = fold(TraceView(trace), [finding("a", 1, 0), finding("a", 1, 2), finding("a", 2, 1),
                                     finding("b", 1, 1)])
    assert [(f.title, f.location.line if f.location else 0, f.count) for f in folded] == [
        ("a", 1, 2), ("a", 2, 1), ("b", 1, 1)]
    assert (folded[0].first_t, folded[0].last_t) == (S, 3 * S)
    assert folded[1].first_t == -1  # a lone finding is not folded
