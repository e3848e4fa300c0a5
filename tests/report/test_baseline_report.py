"""A report of ``run --baseline``: its baseline run (schema 1.2) follows the schema, survives
the round trip and redaction, and every format says where the eager figures came from."""

from __future__ import annotations

import dataclasses
import json

import jsonschema

from graphdoctor.report import schema
from graphdoctor.report.document import SCHEMA_VERSION, to_json
from graphdoctor.report.io import loads
from graphdoctor.report.redact import redact
from graphdoctor.report.render.markdown import render_markdown
from graphdoctor.report.render.text import render_text
from graphdoctor.trace.names import GRAPHS_ENV, GRAPHS_OFF
from tests.baselines import SWITCHED, report_with_baseline
from tests.report.helpers import plain
from tests.report.test_schema import STRICT


def test_the_baseline_run_is_in_the_report_and_follows_the_schema() -> None:
    data = plain(report_with_baseline("compile_healthy"))
    assert data["schema_version"] == SCHEMA_VERSION
    assert data["baseline"] == {
        "outcome": "exited with code 0 after 2 s", "complete": True, "exit_code": 0,
        "wall_ns": 2 * 10**9, "eager_calls": 50, "switched_off": [SWITCHED],
        "kept_as_written": ["torch.cuda.graph at /home/alice/proj/x.py:9 captured as written"]}
    jsonschema.validate(data, STRICT, cls=jsonschema.Draft202012Validator)
    schema.check(data)
    again = to_json(loads(json.dumps(data).encode()))
    assert json.loads(json.dumps(again)) == data


def test_a_report_without_a_baseline_has_no_such_part() -> None:
    data = plain(report_with_baseline("compile_healthy"))
    del data["baseline"]
    assert loads(json.dumps(data).encode()).baseline is None


def test_the_verdict_and_the_formats_say_where_eager_came_from() -> None:
    report = report_with_baseline("compile_healthy")
    verdict = report.diagnosis.verdicts[0]
    assert verdict.kind == "faster" and "eager from the --baseline run" in verdict.summary
    text = render_text(report, width=200)
    assert "Baseline run (graphdoctor run --baseline)" in text
    assert "the script ran again with CUDA graphs off and exited with code 0 after 2 s; 50 " \
           "eager calls timed" in text
    markdown = render_markdown(report)
    assert "#### Baseline run (graphdoctor run --baseline)\n\n- the script ran again" in markdown
    assert "eager from the --baseline run (the script run again with CUDA graphs off) |" \
        in markdown  # the verdict's cell holds all of it


def test_redaction_takes_the_paths_out_of_the_baseline_and_keeps_graphdoctors_switch() -> None:
    report = redact(report_with_baseline("compile_healthy"))
    assert report.baseline is not None
    assert "/home/alice" not in " ".join(report.baseline.switched_off
                                         + report.baseline.kept_as_written)
    assert report.baseline.switched_off[0].startswith("torch.compile (mode='reduce-overhead') "
                                                      "at <redacted>/compile_healthy.py:6")
    jsonschema.validate(plain(report), STRICT, cls=jsonschema.Draft202012Validator)


def test_redaction_keeps_the_value_of_graphdoctors_own_switch() -> None:
    report = report_with_baseline("compile_healthy")
    meta = dataclasses.replace(report.trace.meta,
                               env=((GRAPHS_ENV, GRAPHS_OFF), ("CUDA_VISIBLE_DEVICES", "0")))
    redacted = redact(dataclasses.replace(report, trace=dataclasses.replace(report.trace,
                                                                            meta=meta)))
    assert redacted.trace.meta.env == ((GRAPHS_ENV, GRAPHS_OFF),
                                       ("CUDA_VISIBLE_DEVICES", "<redacted>"))
