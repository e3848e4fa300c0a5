"""``--redact`` takes out secrets the report never recorded as such: the environment's secret
variables' values (collected where the redaction runs) and well-known token shapes,
wherever they appear; the default report says it is not redacted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from graphdoctor.report.redact import KEPT_NOTICE, REDACTED_NOTICE
from graphdoctor.report.secrets import SECRET, Secrets, secret_values

# Values shaped as the real ones are (made up): a Hugging Face token, an AWS secret key and
# a W&B key, which is 40 hex digits and has no shape to tell it by.
ENVIRONMENT = {"HF_TOKEN": "hf_QmVyeVNlY3JldFRva2VuMTIzNDU2Nzg5MA",
               "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
               "WANDB_API_KEY": "0123456789abcdef0123456789abcdef01234567"}
SHAPES = ["hf_abcdefghijklmnopqrstuvwxyz012345", "sk-proj-abcdefghijklmnopqrstuvwxyz0123",
          "sk-ant-api03-abcdefghijklmnopqrstuvwx", "AKIAIOSFODNN7EXAMPLE",
          "ghp_abcdefghijklmnopqrstuvwxyz0123456789", "xoxb-1234567890-abcdefghij",
          "AIzaSyA-abcdefghijklmnopqrstuvwxyz01234",
          "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
          "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----"]


def test_the_variables_named_as_secrets_are_the_ones_collected() -> None:
    environ = {**ENVIRONMENT, "DB_PASSWORD": "hunter2hunter2", "GITHUB_TOKEN": "abcdefgh12",
               "PATH": "/usr/bin:/bin", "HOME": "/home/alice", "KEYBOARD_LAYOUT": "dvorak-intl",
               "CUDA_VISIBLE_DEVICES": "0,1,2,3", "SHORT_TOKEN": "1234"}
    assert secret_values(environ) == sorted([*ENVIRONMENT.values(), "hunter2hunter2",
                                             "abcdefgh12"])


@pytest.mark.parametrize("token", SHAPES, ids=[s[:6] for s in SHAPES])
def test_a_token_shape_goes_wherever_it_stands(token: str) -> None:
    text = f"401 for url=https://x.invalid/?key={token} (retrying)"
    assert Secrets().sub(text) == f"401 for url=https://x.invalid/?key={SECRET} (retrying)"


def test_a_value_goes_inside_words_too() -> None:
    value = ENVIRONMENT["WANDB_API_KEY"]
    assert Secrets([value]).sub(f"key={value}, token{value}x") == \
        f"key={SECRET}, token{SECRET}x"


SCRIPT = """\
import os, warnings
import torch

warnings.warn("logged in with " + os.environ["HF_TOKEN"])
raise RuntimeError("upload failed: aws=" + os.environ["AWS_SECRET_ACCESS_KEY"]
                   + " wandb=" + os.environ["WANDB_API_KEY"])
"""


def graphdoctor(folder: Path, *args: str, environ: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, "-m", "graphdoctor", *args], cwd=folder,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, **environ})
    assert done.returncode in (0, 1), done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The audit's case: a script quoting three secrets in a warning and an exception."""
    folder = tmp_path_factory.mktemp("secrets")
    (folder / "train.py").write_text(SCRIPT)
    graphdoctor(folder, "run", "-q", "-o", "plain.json", "train.py", environ=ENVIRONMENT)
    graphdoctor(folder, "run", "-q", "--redact", "-o", "redacted.json", "train.py",
                environ=ENVIRONMENT)
    return folder


@pytest.mark.slow
def test_the_recording_holds_them_before_redaction(recorded: Path) -> None:
    """The control: the secrets are there to be taken out."""
    text = (recorded / "plain.json").read_text()
    assert all(value in text for value in ENVIRONMENT.values())


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["json", "text", "markdown"])
def test_run_redact_takes_out_every_secret(recorded: Path, fmt: str) -> None:
    shown = graphdoctor(recorded, "report", "-f", fmt, "redacted.json", environ={})
    assert not [name for name, value in ENVIRONMENT.items() if value in shown]
    assert SECRET in shown or "\\u003csecret\\u003e" in shown or "&lt;secret&gt;" in shown


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["json", "text", "markdown"])
def test_report_redact_takes_them_out_with_the_reader_s_environment(recorded: Path,
                                                                  fmt: str) -> None:
    shown = graphdoctor(recorded, "report", "--redact", "-f", fmt, "plain.json",
                        environ=ENVIRONMENT)
    assert not [name for name, value in ENVIRONMENT.items() if value in shown]


@pytest.mark.slow
def test_without_the_environment_only_the_shapes_go(recorded: Path) -> None:
    """What the redaction cannot know: a value with no shape, its variable not set here."""
    bare = dict.fromkeys(ENVIRONMENT, "")
    shown = graphdoctor(recorded, "report", "--redact", "-f", "json", "plain.json",
                        environ=bare)
    assert ENVIRONMENT["HF_TOKEN"] not in shown
    assert ENVIRONMENT["WANDB_API_KEY"] in shown


@pytest.mark.slow
def test_the_header_says_whether_the_report_is_redacted(recorded: Path) -> None:
    plain = graphdoctor(recorded, "report", "--width", "400", "plain.json", environ={})
    redacted = graphdoctor(recorded, "report", "--width", "400", "redacted.json", environ={})
    assert KEPT_NOTICE in plain and REDACTED_NOTICE not in plain
    assert REDACTED_NOTICE in redacted and KEPT_NOTICE not in redacted
    assert json.loads(graphdoctor(recorded, "report", "-f", "json", "redacted.json",
                                  environ={}))["redacted"] is True
