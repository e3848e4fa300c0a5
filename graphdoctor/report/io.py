"""Reading and writing report files, with one clear error for every way a file can be bad.

A name ending in ``.gz`` is written gzip-compressed; reading detects gzip by its magic
bytes, whatever the name. Nothing in a report is executed: it is JSON, read with ``json``.
"""

from __future__ import annotations

import gzip
import json
import os
import zlib
from pathlib import Path
from typing import Any

from graphdoctor.errors import ReportError
from graphdoctor.report.document import FORMAT, SCHEMA_VERSION, Report, from_json, to_json
from graphdoctor.trace.codec import TraceFormatError

SUPPORTED_MAJOR = int(SCHEMA_VERSION.split(".")[0])


def save(report: Report, path: str | os.PathLike[str]) -> Path:
    """Write the report atomically: a reader never sees half a file."""
    path = Path(path)
    data = json.dumps(to_json(report), separators=(",", ":"), ensure_ascii=False).encode()
    if path.suffix == ".gz":
        data = gzip.compress(data, compresslevel=6, mtime=0)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_bytes(data)
    os.replace(temporary, path)
    return path


def load(path: str | os.PathLike[str]) -> Report:
    return parse(read_json(path), str(path))


def read_json(path: str | os.PathLike[str]) -> Any:
    path = Path(path)
    if not path.exists():
        raise ReportError(f"{path}: no such file")
    if path.is_dir():
        raise ReportError(f"{path}: is a folder, not a report file")
    raw = path.read_bytes()
    if not raw.strip():
        raise ReportError(f"{path}: the file is empty")
    try:
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        return json.loads(raw)
    except (OSError, EOFError, zlib.error) as error:
        raise ReportError(f"{path}: the gzip data is damaged or truncated ({error})") from None
    except (UnicodeDecodeError, ValueError) as error:
        raise ReportError(f"{path}: not valid JSON, perhaps truncated ({_short(error)})") from None


def parse(data: Any, name: str = "report") -> Report:
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ReportError(f"{name}: not a graphdoctor report (no \"format\": \"{FORMAT}\")")
    version = str(data.get("schema_version", ""))
    major = version.split(".")[0]
    if not major.isdigit():
        raise ReportError(f"{name}: the report has no valid schema_version ({version!r})")
    if int(major) > SUPPORTED_MAJOR:
        raise ReportError(f"{name}: schema {version} is newer than this graphdoctor reads "
                          f"({SCHEMA_VERSION}); upgrade graphdoctor to open it")
    try:
        return from_json(data)
    except (TraceFormatError, KeyError, TypeError, ValueError, AttributeError,
            IndexError) as error:
        raise ReportError(f"{name}: the report is damaged ({_short(error)})") from None


def _short(error: BaseException) -> str:
    text = str(error) or type(error).__name__
    return text if len(text) < 200 else text[:200] + "..."
