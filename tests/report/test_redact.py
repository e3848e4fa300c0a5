"""--redact: a report safe to attach to a public ticket that still diagnoses the same way."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

from graphdoctor.diagnose import diagnose
from graphdoctor.report.document import to_json
from graphdoctor.report.redact import REDACTED, PathRedactor, redact
from tests.report.helpers import NAMES, hand_made, real

PROJECT = "/work/main"
ABSOLUTE_PATH = re.compile(r"(?<![\w.:/>~-])/(?:[\w.@+-]+/)+[\w.@+-]+")


@pytest.mark.parametrize(("path", "shown"), [
    ("/work/main/fixtures/scripts/a.py", "fixtures/scripts/a.py"),
    ("/opt/venv/lib/python3.12/site-packages/torch/cuda/graphs.py",
     "<site-packages>/torch/cuda/graphs.py"),
    ("/usr/lib/python3.12/threading.py", "<python>/threading.py"),
    ("/home/alice/secret-project/model.py", f"{REDACTED}/model.py"),
    ("/work/mainline/x.py", f"{REDACTED}/x.py"),
    ("~/notes/x.py", f"{REDACTED}/x.py"),
    ("<frozen runpy>", "<frozen runpy>"), ("relative/x.py", "relative/x.py"),
    ("../up/x.py", f"{REDACTED}/x.py"), ("", ""),
])
def test_paths(path: str, shown: str) -> None:
    assert PathRedactor(PROJECT).path(path) == shown


def test_paths_in_text_are_found_but_urls_and_ratios_are_left_alone() -> None:
    text = ('File "/home/bob/x.py", line 3; see https://pytorch.org/docs/a/b.html; '
            "4/5 done; at /work/main/train.py:12 (/tmp/torchinductor_bob/ab/cd.py)")
    assert PathRedactor(PROJECT).text(text) == (
        f'File "{REDACTED}/x.py", line 3; see https://pytorch.org/docs/a/b.html; '
        f"4/5 done; at train.py:12 ({REDACTED}/cd.py)")


@pytest.mark.parametrize("name", NAMES)
def test_no_private_path_host_or_argument_is_left(name: str) -> None:
    report = real(name)
    text = json.dumps(to_json(redact(report)))
    assert ABSOLUTE_PATH.findall(text) == []
    for prefix in ("/work/main", "/opt/", "/usr/lib", "/tmp/", report.trace.meta.cwd):
        assert prefix not in text
    meta = redact(report).trace.meta
    assert meta.cwd == "." and meta.hostname in ("", REDACTED)
    cut = meta.argv.index(meta.target) + 1
    assert all(a == REDACTED for a in meta.argv[cut:])
    assert all(not f.startswith(("/", "<")) for f in redact(report).sources)


def test_environment_values_and_script_arguments_go() -> None:
    report = hand_made()
    meta = dataclasses.replace(report.trace.meta, env=(("TORCH_LOGS", "+dynamo,secret-token"),),
                               argv=(*report.trace.meta.argv, "--api-key", "s3cr3t"))
    shown = redact(dataclasses.replace(report, trace=dataclasses.replace(report.trace, meta=meta)))
    text = json.dumps(to_json(shown))
    assert "secret-token" not in text and "s3cr3t" not in text and "--api-key" not in text
    assert shown.trace.meta.env == (("TORCH_LOGS", REDACTED),)
    assert shown.redacted and not report.redacted


def test_project_code_stays_and_outside_code_goes() -> None:
    report = hand_made()
    outside = "/home/alice/lib/helper.py"
    sources = {**report.sources, outside: {3: "token = 'abc'"}}
    shown = redact(dataclasses.replace(report, sources=sources))
    assert "fixtures/scripts/item_in_capture.py" in shown.sources
    assert not any("helper.py" in f for f in shown.sources)
    assert shown.diagnosis.findings[0].location.code == report.diagnosis.findings[0].location.code


@pytest.mark.parametrize("name", NAMES)
def test_redaction_is_idempotent(name: str) -> None:
    once = redact(real(name))
    assert to_json(redact(once)) == to_json(once)


@pytest.mark.parametrize("name", ["item_in_capture", "compile_graph_break", "gpu_bound",
                                  "sync_between_replays"])
def test_a_redacted_trace_diagnoses_the_same(name: str) -> None:
    report = real(name)
    again = diagnose(redact(report).trace)
    assert [(f.id, f.severity) for f in again.findings] == \
        [(f.id, f.severity) for f in report.diagnosis.findings]
    assert [v.kind for v in again.verdicts] == [v.kind for v in report.diagnosis.verdicts]
