"""Reading and writing report files, with one clear error for every way a file can be bad.

A name ending in ``.gz`` is written gzip-compressed; reading detects gzip by its magic
bytes, whatever the name. Nothing in a report is executed: it is JSON, read with ``json``,
checked against the shipped schema (:mod:`graphdoctor.report.schema`) before any object is
built from it. Reports travel between people, so reading also refuses what could hurt the
reader: a file or a decompressed stream larger than :data:`MAX_REPORT_BYTES`, JSON's
non-standard NaN and Infinity, nesting too deep to parse, and a file that would take more
memory to read than a file of its size may.

JSON can ask for far more memory than it takes on disk, and gzip multiplies that: the budget
a file of its size may take is :mod:`graphdoctor.files.untrusted`' (which spools share).
Decompression stops at a share of it, and before any object is built the memory the text's
objects will take is estimated from its punctuation; a file asking for more than its budget
is refused. The estimate for a real report is 11 to 16 bytes per byte of JSON, well within a
plain file's budget; a compressed report refused for its size opens once decompressed with
gunzip.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from pathlib import Path
from typing import Any

from graphdoctor import units
from graphdoctor.errors import ReportError
from graphdoctor.files.compression import as_named
from graphdoctor.files.json_text import COMPACT, json_bytes
from graphdoctor.files.untrusted import (
    GZIP_MAGIC,
    MAX_FILE_BYTES,
    GzipDamaged,
    OutOfRange,
    TooLarge,
    estimated_memory,
    gunzip,
    memory_budget,
    sane,
    text_limit,
)
from graphdoctor.files.writing import write_file
from graphdoctor.report import schema
from graphdoctor.report.document import FORMAT, SCHEMA_VERSION, Report, from_json, to_json
from graphdoctor.trace.codec import TRACE_VERSION, TraceFormatError
from graphdoctor.trace.spool import records as spool_records

SUPPORTED_MAJOR = int(SCHEMA_VERSION.split(".")[0])
MAX_REPORT_BYTES = MAX_FILE_BYTES
SPOOL_START = f'["{spool_records.TAGS[spool_records.Hello]}",'.encode()  # its first record
SNIFF_BYTES = 1 << 16
_GUNZIP_HINT = " (if it is one, decompress it with gunzip and open that)"


def save(report: Report, path: str | os.PathLike[str]) -> Path:
    """Write the report where ``path`` points, as :mod:`graphdoctor.files.writing` writes:
    atomically to a file (a link's target, for a link), streamed to a device or a FIFO;
    OutputError, one line, where it cannot be written."""
    write_file(path, encoded(report, path))
    return Path(path)


def encoded(report: Report, path: str | os.PathLike[str]) -> bytes:
    """The bytes of the report as a file named ``path`` holds it (gzip for ``.gz``)."""
    return as_named(path, dumps(report))


def dumps(report: Report) -> bytes:
    """The report as compact UTF-8 JSON, as :mod:`graphdoctor.files.json_text` writes it."""
    return json_bytes(to_json(report), COMPACT)


def load(path: str | os.PathLike[str]) -> Report:
    """A report file; or a raw recording (``--keep-spool``'s spool, gzip or not), which is
    assembled and diagnosed here, as ``graphdoctor run`` does with it, reading only the
    source lines the recording vouches for (it may be a stranger's)."""
    size = _regular_size(Path(path))
    if is_spool(path):
        return _load_spool(path, size)
    return parse(read_json(path), str(path))


def _load_spool(path: str | os.PathLike[str], size: int) -> Report:
    from graphdoctor.report.recorded import report_from_spools  # diagnoses: loaded late

    try:
        return report_from_spools([path], own=False)
    except TooLarge as error:
        raise ReportError(f"{path}: {error}, too much for a recording in a "
                          f"{units.format_bytes(size)} file{_GUNZIP_HINT}") from None
    except (TraceFormatError, KeyError, TypeError, ValueError, AttributeError, IndexError,
            OverflowError, RecursionError) as error:
        raise ReportError(f"{path}: the recording is damaged ({_short(error)})") from None


def is_spool(path: str | os.PathLike[str]) -> bool:
    """Whether the file starts as a spool does: its ``hello`` record (looked for in the
    first SNIFF_BYTES only, however the file goes on)."""
    return sniff(path).startswith(SPOOL_START)


def sniff(path: str | os.PathLike[str]) -> bytes:
    """The first bytes of a file (decompressed, for gzip), to tell what it is without
    reading it all; b"" for a file that cannot be read (``load`` says why)."""
    try:
        with open(path, "rb") as raw:
            head = raw.read(SNIFF_BYTES)
    except OSError:
        return b""
    return _first_bytes(head, SNIFF_BYTES) if head[:2] == GZIP_MAGIC else head


def _first_bytes(compressed: bytes, count: int) -> bytes:
    """The first ``count`` bytes of gzip data, or as many as ``compressed`` holds."""
    found = b""
    try:
        for out in gunzip([compressed], limit=SNIFF_BYTES):
            found += out
            if len(found) >= count:
                break
    except (GzipDamaged, TooLarge):  # cut short: what came out before still counts
        pass
    return found


def read_json(path: str | os.PathLike[str]) -> Any:
    path = Path(path)
    _regular_size(path)
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise ReportError(f"{path}: cannot be read ({error.strerror or error})") from None
    return parse_bytes(raw, str(path))


def _regular_size(path: Path) -> int:
    """The size of a regular file small enough to be a report; ReportError for anything
    else (a device such as /dev/zero would be read for ever, a FIFO would wait)."""
    try:
        info = path.stat()
    except FileNotFoundError:
        raise ReportError(f"{path}: no such file") from None
    except (OSError, ValueError) as error:
        raise ReportError(f"{path}: cannot be read ({_short(error)})") from None
    if stat.S_ISDIR(info.st_mode):
        raise ReportError(f"{path}: is a folder, not a report file")
    if not stat.S_ISREG(info.st_mode):
        raise ReportError(f"{path}: not a regular file (a device, a FIFO or a socket); save "
                          "the report to a file and open that")
    if info.st_size > MAX_REPORT_BYTES:
        raise ReportError(f"{path}: larger than {MAX_REPORT_BYTES >> 30} GiB, too big to be a "
                          "report")
    return info.st_size


def loads(raw: bytes, name: str = "report") -> Report:
    """The report in ``raw`` (JSON, or gzip-compressed JSON)."""
    return parse(parse_bytes(raw, name), name)


def parse_bytes(raw: bytes, name: str = "report") -> Any:
    """The JSON value in ``raw``, decompressed first if it is gzip data."""
    text = _text(raw, name)
    try:
        return sane(json.loads(text, parse_constant=_refuse_constant), text)
    except OutOfRange as error:
        raise ReportError(f"{name}: the report is damaged ({error})") from None
    except RecursionError:
        raise ReportError(f"{name}: not a report (JSON nested too deeply)") from None
    except ValueError as error:
        raise ReportError(f"{name}: not valid JSON, perhaps truncated ({_short(error)})") from None


def _text(raw: bytes, name: str) -> str:
    """The JSON text of a file, once it is known that reading it stays within its budget."""
    if not raw or raw.isspace():
        raise ReportError(f"{name}: the file is empty")
    compressed = raw[:2] == GZIP_MAGIC
    data = _gunzip(raw, name) if compressed else raw
    text = _decode(data, name)
    needed = estimated_memory(data, sys.getsizeof(text))
    if needed > memory_budget(len(raw)):
        raise ReportError(f"{name}: would take about {units.format_bytes(needed)} of memory to "
                          f"read, too much for a {units.format_bytes(len(raw))} file"
                          + (_GUNZIP_HINT if compressed else ""))
    return text


def _decode(data: bytes | bytearray, name: str) -> str:
    """The JSON text, in the encoding JSON allows (UTF-8, or UTF-16 or 32 with or without a
    byte order mark), as ``json.loads`` would decode it."""
    try:
        return data.decode(json.detect_encoding(data), "surrogatepass")
    except UnicodeDecodeError as error:
        raise ReportError(f"{name}: not valid JSON, perhaps truncated ({_short(error)})") from None


def _gunzip(raw: bytes, name: str) -> bytearray:
    """Every gzip member decompressed, stopping past the file's share of text (a "zip bomb"
    stays small)."""
    limit = min(text_limit(len(raw)), MAX_REPORT_BYTES)
    try:
        return bytearray().join(gunzip([raw], limit))
    except TooLarge:
        raise ReportError(f"{name}: larger than {units.format_bytes(limit)} once "
                          f"decompressed, too big to be a report from a "
                          f"{units.format_bytes(len(raw))} file{_GUNZIP_HINT}") from None
    except GzipDamaged as error:
        raise ReportError(f"{name}: {error}") from None


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
