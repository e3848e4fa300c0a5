"""The secrets ``--redact`` takes out of every text, wherever they appear.

A report keeps what the script said: its exceptions, warnings and log lines. A script that
quotes its credentials there (``raise ValueError(f"bad token {token}")``, a library that
logs the URL it was given) puts them in the report. The report records few environment
variables (those that change what PyTorch does), so the redactor cannot know the others'
values from the report alone. Two things find them:

- the values of the environment variables whose names say they hold a secret
  (:data:`SECRET_NAME`: ``HF_TOKEN``, ``AWS_SECRET_ACCESS_KEY``, ``WANDB_API_KEY``,
  ``DB_PASSWORD``...), collected where the redaction runs (``graphdoctor run --redact`` at
  the start of the run, ``report --redact`` from the reader's own environment), never
  written anywhere; and
- the shapes of well-known tokens (:data:`TOKEN_SHAPES`: Hugging Face ``hf_…``, OpenAI and
  Anthropic ``sk-…``, AWS access key ids, GitHub, Slack and Google API keys, JSON Web
  Tokens, private key blocks), wherever they appear, whoever's they are.

Each becomes :data:`SECRET`. A value shorter than :data:`MIN_SECRET_LENGTH` is left alone:
``1`` or ``us-east`` would take ordinary words with it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

SECRET = "<secret>"
MIN_SECRET_LENGTH = 8
SECRET_NAME = re.compile(
    r"TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY"
    r"|(?:^|_)KEY(?:$|_)|AUTH|COOKIE|SESSION|SIGNATURE|^AWS_|^AZURE_|DSN$|DATABASE_URL",
    re.IGNORECASE)
TOKEN_SHAPES = re.compile("|".join((
    r"\bhf_[A-Za-z0-9]{20,}",  # Hugging Face
    r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}",  # OpenAI, Anthropic
    r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",  # AWS access key ids
    r"\bgh[pousr]_[A-Za-z0-9]{30,}",  # GitHub
    r"\bgithub_pat_[A-Za-z0-9_]{40,}",
    r"\bxox[abposr]-[A-Za-z0-9-]{10,}",  # Slack
    r"\bAIza[0-9A-Za-z_-]{35}",  # Google API keys
    r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",  # JSON Web Tokens
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)",
)))


def secret_values(environ: Mapping[str, str]) -> list[str]:
    """The values of the variables in ``environ`` whose names say they hold a secret."""
    return sorted({value for name, value in environ.items()
                   if SECRET_NAME.search(name) and len(value) >= MIN_SECRET_LENGTH})


class Secrets:
    """Replaces the given values, anywhere in a text (not only as whole words: a token is
    one wherever it stands), and every token shape, by :data:`SECRET`."""

    def __init__(self, values: Iterable[str] = ()) -> None:
        longest_first = sorted(set(values), key=len, reverse=True)
        self.values = re.compile("|".join(map(re.escape, longest_first))) \
            if longest_first else None

    def sub(self, text: str) -> str:
        if self.values is not None:
            text = self.values.sub(SECRET, text)
        return TOKEN_SHAPES.sub(SECRET, text)
