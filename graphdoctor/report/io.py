"""Reading and writing report files, with one clear error for every way a file can be bad.

A name ending in ``.gz`` is written gzip-compressed; reading detects gzip by its magic
bytes, whatever the name. Nothing in a report is executed: it is JSON, read with ``json``,
checked against the shipped schema (:mod:`graphdoctor.report.schema`) before any object is
built from it. Reports travel between people, so reading also refuses what could hurt the
reader: a file or a decompressed stream larger than :data:`MAX_REPORT_BYTES`, JSON's
non-standard NaN and Infinity, nesting too deep to parse, and a file that would take more
memory to read than a file of its size may (:func:`memory_budget`).

JSON can ask for far more memory than it takes on disk: ``{},`` is 3 bytes of text and
72 bytes as Python objects, and gzip multiplies that by a thousand, so a 100 KB file could
take gigabytes. Decompression stops at a share of the file's budget, and before any object
is built the memory the text's objects will take is estimated from its punctuation
(:func:`estimated_memory`); a file asking for more than its budget is refused. The estimate
for a real report is 11 to 16 bytes per byte of JSON, well within a plain file's budget; a
compressed report refused for its size opens once decompressed with gunzip.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import secrets
import sys
import zlib
from pathlib import Path
from typing import Any

from graphdoctor.errors import ReportError
from graphdoctor.report import facts, schema
from graphdoctor.report.document import FORMAT, SCHEMA_VERSION, Report, from_json, to_json
from graphdoctor.trace import spool_records
from graphdoctor.trace.codec import TRACE_VERSION, TraceFormatError

SUPPORTED_MAJOR = int(SCHEMA_VERSION.split(".")[0])
MAX_REPORT_BYTES = 2 * 2**30
MIN_MEMORY_BUDGET = 640 * 2**20  # what any file may take to read, however small
MEMORY_PER_FILE_BYTE = 80  # and what a bigger file may take for each byte of it
TEXT_SHARE = 8  # decompressed text may fill an eighth of the budget: it is held as bytes,
# as text and as parsed strings, and a string can take four bytes a character
# Upper bounds of what the JSON parser builds, in bytes: an object or array (a dict with up
# to five keys is 184, a one-item list 88), a value after a comma (its slot and an int or
# float), and a string's header (76 at most; its characters are counted with the text).
CONTAINER_BYTES = 240
VALUE_BYTES = 40
STRING_BYTES_PER_QUOTE = 40
_GZIP_MAGIC = b"\x1f\x8b"
SPOOL_START = f'["{spool_records.TAGS[spool_records.Hello]}",'.encode()  # its first record
_GUNZIP_HINT = " (if it is one, decompress it with gunzip and open that)"


def save(report: Report, path: str | os.PathLike[str]) -> Path:
    """Write the report atomically: a reader never sees half a file."""
    path = Path(path)
    data = dumps(report)
    if path.suffix == ".gz":
        data = gzip.compress(data, compresslevel=6, mtime=0)
    write_atomically(path, data)
    return path


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file of this writer's own, then rename
    it: a reader never sees half a file, and two writers of one name never interleave."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        with open(temporary, "xb") as out:  # the mode the umask gives, as the file's own
            out.write(data)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def dumps(report: Report) -> bytes:
    """The report as compact UTF-8 JSON."""
    return json.dumps(to_json(report), separators=(",", ":"), ensure_ascii=False).encode()


def load(path: str | os.PathLike[str]) -> Report:
    """A report file; or a raw recording (``--keep-spool``'s spool, gzip or not), which is
    assembled and diagnosed here, as ``graphdoctor run`` does with it."""
    if is_spool(path):
        from graphdoctor.report.recorded import report_from_spools  # diagnoses: loaded late

        return report_from_spools([path])
    return parse(read_json(path), str(path))


def is_spool(path: str | os.PathLike[str]) -> bool:
    """Whether the file starts as a spool does: its ``hello`` record."""
    try:
        with open(path, "rb") as raw:
            head = raw.read(2)
            raw.seek(0)
            stream = gzip.GzipFile(fileobj=raw) if head == _GZIP_MAGIC else raw
            start = stream.read(len(SPOOL_START))
    except (OSError, EOFError, zlib.error):  # not readable as a spool: load says why
        return False
    return start == SPOOL_START


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
    text = _text(raw, name)
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise ReportError(f"{name}: not a report (JSON nested too deeply)") from None
    except ValueError as error:
        raise ReportError(f"{name}: not valid JSON, perhaps truncated ({_short(error)})") from None


def _text(raw: bytes, name: str) -> str:
    """The JSON text of a file, once it is known that reading it stays within its budget."""
    if not raw or raw.isspace():
        raise ReportError(f"{name}: the file is empty")
    budget = memory_budget(len(raw))
    compressed = raw[:2] == _GZIP_MAGIC
    data = _gunzip(raw, name, budget // TEXT_SHARE) if compressed else raw
    text = _decode(data, name)
    needed = estimated_memory(data, text)
    if needed > budget:
        raise ReportError(f"{name}: would take about {facts.format_bytes(needed)} of memory to "
                          f"read, too much for a {facts.format_bytes(len(raw))} file"
                          + (_GUNZIP_HINT if compressed else ""))
    return text


def memory_budget(file_size: int) -> int:
    """The most memory reading a file of ``file_size`` bytes may take."""
    return max(MIN_MEMORY_BUDGET, MEMORY_PER_FILE_BYTE * file_size)


def estimated_memory(data: bytes | bytearray, text: str) -> int:
    """An upper bound of the memory reading ``data`` (decoded as ``text``) takes: the bytes,
    the text, its characters again in the parsed strings, and what each object, array, value
    and string costs. Brackets, commas and quotes inside strings are counted too: an
    overestimate, cheap to make."""
    containers = data.count(b"{") + data.count(b"[")
    text_bytes = len(data) + 2 * sys.getsizeof(text)
    return (text_bytes + CONTAINER_BYTES * containers + VALUE_BYTES * data.count(b",")
            + STRING_BYTES_PER_QUOTE * data.count(b'"'))


def _decode(data: bytes | bytearray, name: str) -> str:
    """The JSON text, in the encoding JSON allows (UTF-8, or UTF-16 or 32 with or without a
    byte order mark), as ``json.loads`` would decode it."""
    try:
        return data.decode(json.detect_encoding(data), "surrogatepass")
    except UnicodeDecodeError as error:
        raise ReportError(f"{name}: not valid JSON, perhaps truncated ({_short(error)})") from None


def _gunzip(raw: bytes, name: str, limit: int) -> bytearray:
    """Decompress every gzip member, stopping past ``limit`` bytes (a "zip bomb" stays
    small)."""
    limit, size = min(limit, MAX_REPORT_BYTES), len(raw)
    out = bytearray()
    while raw:
        stream = zlib.decompressobj(wbits=31)
        try:
            out += stream.decompress(raw, limit + 1 - len(out))
        except zlib.error as error:
            raise ReportError(f"{name}: the gzip data is damaged ({error})") from None
        if len(out) > limit:
            raise ReportError(f"{name}: larger than {facts.format_bytes(limit)} once "
                              f"decompressed, too big to be a report from a "
                              f"{facts.format_bytes(size)} file{_GUNZIP_HINT}")
        if not stream.eof:
            raise ReportError(f"{name}: the gzip data is truncated")
        raw = stream.unused_data.lstrip(b"\0")
    return out


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
