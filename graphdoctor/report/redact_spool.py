"""``run --redact --keep-spool``: the kept recording redacted as its report is.

A kept spool is read by every command as a report is, so it travels as one: the raw
recording holds the script's arguments, the host's name, the environment's values, the
paths of the machine and whatever the script said (secrets included). Under ``--redact``
each record is written again with every string in it passed through the report's own
redactor (:func:`graphdoctor.report.redact.redactor_for`: paths, the host's, user's and
run's words, secrets), the command line redacted as the report's is, the host name and the
environment's values replaced; the events, figures and digests stay, so the redacted spool
diagnoses as the report does. A record too long to read is left out.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

from graphdoctor.report.redact import OWN_SWITCHES, REDACTED, Redactor, redact_argv
from graphdoctor.trace.spool import records as sr
from graphdoctor.trace.spool.file import finite, read_records

HELLO = sr.TAGS[sr.Hello]
META = sr.TAGS[sr.MetaInfo]


def redacted_lines(spool: str | os.PathLike[str], redactor: Redactor) -> Iterator[bytes]:
    """The spool's records, redacted, as the spool's lines."""
    for record in read_records(spool):
        if not record:  # a line too long or too deep to read
            continue
        redacted = [record[0], *(_strings(value, redactor) for value in record[1:])]
        if record[0] in (HELLO, META) and len(record) > 1 and isinstance(record[1], dict):
            redacted[1] = _run(record[1], redacted[1], redactor)
        line = json.dumps(finite(redacted), separators=(",", ":"), allow_nan=False)
        yield (line + "\n").encode()


def _run(raw: dict[str, Any], redacted: dict[str, Any], redactor: Redactor) -> dict[str, Any]:
    """A hello or meta record's facts of the run, as a redacted report's meta shows them."""
    if "argv" in raw:
        argv = tuple(str(a) for a in raw.get("argv") or ())
        redacted["argv"] = list(redact_argv(argv, str(raw.get("target", "")), redactor))
    if "target" in raw:
        redacted["target"] = redactor.path(str(raw["target"]))
    if raw.get("cwd"):
        redacted["cwd"] = "."
    if raw.get("hostname"):
        redacted["hostname"] = REDACTED
    if isinstance(raw.get("env"), list):
        redacted["env"] = [[pair[0], pair[1] if pair[0] in OWN_SWITCHES else REDACTED]
                           for pair in raw["env"] if isinstance(pair, list) and len(pair) == 2]
    return redacted


def _strings(value: Any, redactor: Redactor) -> Any:
    """``value`` with each string in it, keys too, as the redactor rewrites text."""
    if isinstance(value, str):
        return redactor.text(value)
    if isinstance(value, dict):
        return {redactor.text(str(k)): _strings(v, redactor) for k, v in value.items()}
    if isinstance(value, list):
        return [_strings(v, redactor) for v in value]
    return value
