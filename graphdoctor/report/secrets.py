"""The secrets ``--redact`` takes out of every text, wherever they appear.

A report keeps what the script said: its exceptions, warnings and log lines. A script that
quotes its credentials there (``raise ValueError(f"bad token {token}")``, a library that
logs the URL it was given) puts them in the report. The report records few environment
variables (those that change what PyTorch does), so the redactor cannot know the others'
values from the report alone. Three things find them:

- the values of the environment variables whose names say they hold a secret
  (:data:`SECRET_NAME`: ``HF_TOKEN``, ``AWS_SECRET_ACCESS_KEY``, ``WANDB_API_KEY``,
  ``DB_PASSWORD``, ``MYSQL_PWD``, ``DB_PASS``, ``SMTP_PW``...), collected where the redaction
  runs (``graphdoctor run --redact`` at the start of the run, ``report --redact`` from the
  reader's own environment), never written anywhere. A value of :data:`MIN_SECRET_LENGTH`
  characters or more goes wherever it stands, inside words too; a shorter one, down to
  :data:`MIN_WORD_LENGTH`, goes as a whole word, where its variable's name says it is a
  password or a token (:data:`PASSWORD_NAME`); for the broader names (``SESSION``,
  ``AUTH``...), whose short values are settings (``XDG_SESSION_CLASS=user``), and for values
  of one or two characters (``1``, ``on``), taking them out would take ordinary words with
  them, and they stay;
- credentials in a URL (``postgres://user:password@host/db``, ``redis://:pw@host``,
  ``https://TOKEN@host``): everything between ``://`` and the host's ``@``, wherever a URL
  stands in a text, whoever's it is (:data:`URL_CREDENTIALS`); and
- the shapes of well-known tokens (:data:`TOKEN_SHAPES`: Hugging Face ``hf_…``, OpenAI and
  Anthropic ``sk-…``, AWS access key ids, GitHub, Slack and Google API keys, JSON Web
  Tokens, private key blocks), wherever they appear, whoever's they are.

Each becomes :data:`SECRET`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

SECRET = "<secret>"
MIN_SECRET_LENGTH = 8
MIN_WORD_LENGTH = 3
# A password's own short names, as whole parts of a name (MYSQL_PWD, DB_PASS, SMTP_PW), but
# not the shell's working folder (PWD, OLDPWD).
_PASS_PARTS = r"(?:^|_)(?:PASS|PW|PWD)(?:$|_)"
NOT_SECRET_NAMES = frozenset({"PWD", "OLDPWD"})
PASSWORD_NAME = re.compile(
    r"TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|"
    + _PASS_PARTS, re.IGNORECASE)
SECRET_NAME = re.compile(
    PASSWORD_NAME.pattern + r"|(?:^|_)KEY(?:$|_)|AUTH|COOKIE|SESSION|SIGNATURE|^AWS_|^AZURE_"
    r"|DSN$|DATABASE_URL", re.IGNORECASE)
# The user information of a URL, up to the host's @ (the last before the path): a password
# holding an unescaped @ goes whole.
URL_CREDENTIALS = re.compile(r"(?<=://)[^\s/?#\[\]'\"<>]*@")
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
    """The values of the variables in ``environ`` whose names say they hold a secret (see the
    module doc for which lengths count)."""
    return sorted({value for name, value in environ.items()
                   if name.upper() not in NOT_SECRET_NAMES and _counts(name, value)})


def _counts(name: str, value: str) -> bool:
    if len(value) >= MIN_SECRET_LENGTH:
        return bool(SECRET_NAME.search(name))
    return len(value) >= MIN_WORD_LENGTH and bool(PASSWORD_NAME.search(name))


class Secrets:
    """Replaces the given values (a long one anywhere in a text: a token is one wherever it
    stands; a short one as a whole word), credentials in URLs and every token shape, by
    :data:`SECRET`."""

    def __init__(self, values: Iterable[str] = ()) -> None:
        distinct = sorted(set(values), key=len, reverse=True)
        long = [v for v in distinct if len(v) >= MIN_SECRET_LENGTH]
        short = [v for v in distinct if MIN_WORD_LENGTH <= len(v) < MIN_SECRET_LENGTH]
        self.values = re.compile("|".join(map(re.escape, long))) if long else None
        self.words = re.compile(r"(?<![A-Za-z0-9])(?:" + "|".join(map(re.escape, short))
                                + r")(?![A-Za-z0-9])") if short else None

    def sub(self, text: str) -> str:
        for found in (self.values, self.words):
            if found is not None:
                text = found.sub(SECRET, text)
        text = URL_CREDENTIALS.sub(SECRET + "@", text) if "://" in text else text
        return TOKEN_SHAPES.sub(SECRET, text)
