"""``--redact`` takes out secrets the report never recorded as such: the environment's secret
variables' values (collected where the redaction runs) and well-known token shapes,
wherever they appear; the default report says it is not redacted."""

from __future__ import annotations

import gzip
import json
import os
import socket
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
               "CUDA_VISIBLE_DEVICES": "0,1,2,3", "SHORT_TOKEN": "1234", "TINY_TOKEN": "12"}
    assert secret_values(environ) == sorted([*ENVIRONMENT.values(), "hunter2hunter2",
                                             "abcdefgh12", "1234"])


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


# Secrets under the names and in the places the audit found kept: short values, the common
# short names of a password, and credentials in URLs.
SHORT_SECRETS = {"MYSQL_PWD": "hunter2", "DB_PASS": "s3cr3t", "SMTP_PW": "pw4u",
                 "REDIS_URL": "redis://:redispass@cache:6379/0"}
URL_PASSWORDS = ["redispass", "pgpass99"]
KEPT_SCRIPT = """\
import os, warnings
import torch

warnings.warn("db " + os.environ["MYSQL_PWD"] + ", " + os.environ["DB_PASS"] + " smtp "
              + os.environ["SMTP_PW"])
warnings.warn("cache at " + os.environ["REDIS_URL"] + " and postgres://admin:pgpass99@db/prod")
raise RuntimeError("token " + os.environ["HF_TOKEN"])
"""


def test_short_values_and_the_short_names_of_a_password_are_collected() -> None:
    environ = {**SHORT_SECRETS, "PWD": "/home/alice/project", "OLDPWD": "/home/alice",
               "USE_AUTH": "1", "XDG_SESSION_CLASS": "user", "BYPASS_CACHE": "yes-please"}
    assert secret_values(environ) == sorted(["hunter2", "s3cr3t", "pw4u"])


@pytest.mark.parametrize("url", ["redis://:redispass@cache:6379/0",
                                 "postgres://admin:pgpass99@db/prod",
                                 "https://ghp_short@github.com/org/repo.git"])
def test_credentials_in_a_url_go_wherever_it_stands(url: str) -> None:
    said = Secrets().sub(f"connecting to {url} (retry 3)")
    host = url.rsplit("@", 1)[1]
    assert said == f"connecting to {url.split('://')[0]}://{SECRET}@{host} (retry 3)"


def test_a_short_value_goes_as_a_whole_word_only() -> None:
    assert Secrets(["hunter2"]).sub("pw=hunter2, hunter22 kept") == \
        f"pw={SECRET}, hunter22 kept"


@pytest.mark.slow
@pytest.mark.parametrize("kept", ["kept.spool", "kept.spool.jsonl.gz"])
def test_run_redact_redacts_the_kept_spool_too(tmp_path: Path, kept: str) -> None:
    """``run --redact --keep-spool`` kept the raw recording: tokens, arguments, the host."""
    (tmp_path / "train.py").write_text(KEPT_SCRIPT)
    environ = {**ENVIRONMENT, **SHORT_SECRETS}
    graphdoctor(tmp_path, "run", "-q", "--redact", "-o", "r.json", "--keep-spool", kept,
                "train.py", "--api-key", "argument-secret-123", environ=environ)
    raw = gzip.decompress((tmp_path / kept).read_bytes()) if kept.endswith(".gz") else \
        (tmp_path / kept).read_bytes()
    secrets = [*ENVIRONMENT.values(), *list(SHORT_SECRETS.values())[:3], *URL_PASSWORDS,
               "argument-secret-123", socket.gethostname()]
    for shown in (raw.decode(), graphdoctor(tmp_path, "report", "-f", "json", kept,
                                            environ={}),
                  graphdoctor(tmp_path, "report", "-f", "json", "r.json", environ={})):
        assert not [value for value in secrets if value in shown]
        assert "<secret>" in shown or "\\u003csecret\\u003e" in shown
