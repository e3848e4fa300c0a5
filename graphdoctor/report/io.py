"""Reading and writing report files, with one clear error for every way a file can be bad.

A name ending in ``.gz`` is written gzip-compressed; reading detects gzip by its magic
bytes, whatever the name. Nothing in a report is executed: it is JSON, read with ``json``,
checked against the shipped schema (:mod:`graphdoctor.report.schema`) before any object is
built from it. Reports travel between people, so reading also refuses what could hurt the
reader: a file or a decompressed stream larger than :data:`MAX_REPORT_BYTES`, JSON's
non-standard NaN and Infinity, and nesting too deep to parse.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import zlib
from pathlib import Path
from typing import Any

from graphdoctor.errors import ReportError
from graphdoctor.report import schema
from graphdoctor.report.document import FORMAT, SCHEMA_VERSION, Report, from_json, to_json
from graphdoctor.trace.codec import TRACE_VERSION, TraceFormatError

SUPPORTED_MAJOR = int(SCHEMA_VERSION.split(".")[0])
MAX_REPORT_BYTES = 2 * 2**30
_GZIP_MAGIC = b"\x1f\x8b"


def save(report: Report, path: str | os.PathLike[str]) -> Path:
    """Write the report atomically: a reader never sees half a file."""
    path = Path(path)
    data = dumps(report)
    if path.suffix == ".gz":
        data = gzip.compress(data, compresslevel=6, mtime=0)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_bytes(data)
    os.replace(temporary, path)
    return path


def dumps(report: Report) -> bytes:
    """The report as compact UTF-8 JSON."""
    return json.dumps(to_json(report), separators=(",", ":"), ensure_ascii=False).encode()


def load(path: str | os.PathLike[str]) -> Report:
    return parse(read_json(path), str(path))


def read_json(path: str | os.PathLike[str]) -> Any:
    path = Path(path)
    if not path.exists():
        raise ReportError(f"{path}: no such file")
    if path.is_dir():
        raise ReportError(f"{path}: is a folder, not a report file")
    if path.stat().st_size > MAX_REPORT_BYTES:
        raise ReportError(f"{path}: larger than {MAX_REPORT_BYTES >> 30} GiB, too big to be a "
                          "report")
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise ReportError(f"{path}: cannot be read ({error.strerror or error})") from None
    return parse_bytes(raw, str(path))


def loads(raw: bytes, name: str = "report") -> Report:
    """The report in ``raw`` (JSON, or gzip-compressed JSON)."""
    return parse(parse_bytes(raw, name), name)


def parse_bytes(raw: bytes, name: str = "report") -> Any:
    """The JSON value in ``raw``, decompressed first if it is gzip data."""
    if not raw.strip():
        raise ReportError(f"{name}: the file is empty")
    if raw[:2] == _GZIP_MAGIC:
        raw = _gunzip(raw, name)
    try:
        return json.loads(raw, parse_constant=_refuse_constant)
    except RecursionError:
        raise ReportError(f"{name}: not a report (JSON nested too deeply)") from None
    except (UnicodeDecodeError, ValueError) as error:
        raise ReportError(f"{name}: not valid JSON, perhaps truncated ({_short(error)})") from None


def _gunzip(raw: bytes, name: str) -> bytes:
    """Decompress every gzip member, stopping at MAX_REPORT_BYTES (a "zip bomb" stays small)."""
    out = bytearray()
    while raw:
        stream = zlib.decompressobj(wbits=31)
        try:
            out += stream.decompress(raw, MAX_REPORT_BYTES + 1 - len(out))
        except zlib.error as error:
            raise ReportError(f"{name}: the gzip data is damaged ({error})") from None
        if len(out) > MAX_REPORT_BYTES:
            raise ReportError(f"{name}: larger than {MAX_REPORT_BYTES >> 30} GiB once "
                              "decompressed, too big to be a report")
        if not stream.eof:
            raise ReportError(f"{name}: the gzip data is truncated")
        raw = stream.unused_data.lstrip(b"\0")
    return bytes(out)


def _refuse_constant(text: str) -> Any:
    raise ValueError(f"{text} is not a JSON number")


def parse(data: Any, name: str = "report") -> Report:
    """The report in a JSON value, after the format, version and schema checks."""
    _check_identity(data, name)
    try:
        schema.check(data)
    except schema.SchemaViolation as violation:
        raise ReportError(f"{name}: the report is damaged or not one graphdoctor wrote "
                          f"({_short(violation)})") from None
    if data["trace"]["version"] > TRACE_VERSION:
        raise ReportError(f"{name}: its trace encoding (version {data['trace']['version']}) is "
                          f"newer than this graphdoctor reads; upgrade graphdoctor to open it")
    try:
        return from_json(data)
    except (TraceFormatError, KeyError, TypeError, ValueError, AttributeError,
            IndexError, OverflowError) as error:
        raise ReportError(f"{name}: the report is damaged ({_short(error)})") from None


def _check_identity(data: Any, name: str) -> None:
    """A graphdoctor report, of a major version this graphdoctor reads."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ReportError(f"{name}: not a graphdoctor report (no \"format\": \"{FORMAT}\")")
    version = data.get("schema_version")
    major = version.split(".")[0] if isinstance(version, str) else ""
    if not re.fullmatch(r"[0-9]{1,9}", major):
        raise ReportError(f"{name}: the report has no valid schema_version ({version!r})")
    if int(major) > SUPPORTED_MAJOR:
        raise ReportError(f"{name}: schema {version} is newer than this graphdoctor reads "
                          f"({SCHEMA_VERSION}); upgrade graphdoctor to open it")


def _short(error: BaseException) -> str:
    text = str(error) or type(error).__name__
    return text if len(text) < 200 else text[:200] + "..."
