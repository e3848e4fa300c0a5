"""--redact: a report safe to attach to a public ticket that still diagnoses the same way."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

from graphdoctor.diagnose import diagnose
from graphdoctor.report.document import to_json
from graphdoctor.report.redact import (
    ARGUMENT,
    ENV_VALUE,
    HOST,
    REDACTED,
    USER,
    PathRedactor,
    redact,
)
from graphdoctor.trace.model import WarningRecord
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
    ("/home/bob", "~"), ("/home/bob/", "~"), ("/Users/alice", "~"), ("/root", "~"),
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


def warned(message: str, hostname: str = "gpu-17.cluster.example.com",
           script_args: tuple[str, ...] = (), env: tuple[tuple[str, str], ...] = ()) -> str:
    """The message of a warning in a report of this machine and run, once redacted."""
    report = hand_made()
    meta = dataclasses.replace(report.trace.meta, hostname=hostname, env=env,
                               argv=(*report.trace.meta.argv, *script_args))
    trace = dataclasses.replace(report.trace, meta=meta,
                                warnings=[WarningRecord(0, "UserWarning", message)])
    return redact(dataclasses.replace(report, trace=trace)).trace.warnings[0].message


def test_the_host_is_taken_out_of_text_by_its_whole_name_and_its_first_part() -> None:
    assert warned("on gpu-17.cluster.example.com (gpu-17): gpu-170 is another") == \
        f"on {HOST} ({HOST}): gpu-170 is another"


def test_argument_and_environment_values_are_taken_out_of_text() -> None:
    shown = warned("token s3cr3t-value, run my-run-42, conf expandable_segments:True",
                   script_args=("--token=s3cr3t-value", "--run", "my-run-42"),
                   env=(("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"),))
    assert shown == f"token {ARGUMENT}, run {ARGUMENT}, conf {ENV_VALUE}"


def test_short_values_blank_out_nothing() -> None:
    message = "torch.cuda failed at step 1 of 10 on cuda:0"
    assert warned(message, script_args=("--device", "cuda", "--steps", "1", "--lr=1e-4"),
                  env=(("CUDA_VISIBLE_DEVICES", "0,1"),)) == message


def test_a_value_inside_a_longer_word_stays() -> None:
    assert warned("xs3cr3t-value2 and s3cr3t-value_1", script_args=("s3cr3t-value",)) == \
        f"xs3cr3t-value2 and {ARGUMENT}_1"


def test_the_users_name_read_from_a_home_folder_goes_everywhere() -> None:
    shown = warned("cannot open /home/bob/data/x.bin as bob: see /home/bob and ~bob's notes; "
                   "bobcat stays, and so does page of https://example.com/home/page")
    assert shown == (f"cannot open {REDACTED}/x.bin as {USER}: see ~ and ~{USER}'s notes; "
                     "bobcat stays, and so does page of https://example.com/home/page")
