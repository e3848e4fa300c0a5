"""Spools a stranger could write: a real recording's records, its user frames pointed at
files of the reader's (secrets, devices, links), or its bytes made to cost the reader memory
and time. Used by tests/report/test_hostile_spools.py."""

from __future__ import annotations

import gzip
import hashlib
import json
import socket
from pathlib import Path
from typing import Any

from graphdoctor.trace.spool import records as sr
from graphdoctor.trace.spool.file import read_records
from tests.conftest import RECORDINGS

RECORDING = RECORDINGS / "item_in_capture.spool.jsonl.gz"  # a failed capture, its culprit
# named at a user line, so the report cites user lines in findings, graphs and exceptions
HERE = socket.gethostname()


def records(cwd: str, cited: str, host: str = HERE, line: int = 1,
            digests: tuple[sr.SourceDigest, ...] = ()) -> list[list[Any]]:
    """The recording's records as if made on ``host`` in ``cwd``, every user frame at
    ``cited``:``line``, with ``digests`` appended as a finished run's would be."""
    out = []
    for record in read_records(RECORDING):
        if record[0] == sr.TAGS[sr.Hello]:
            record[1] = {**record[1], "cwd": cwd, "target": cited}
        elif record[0] == sr.TAGS[sr.MetaInfo]:
            record[1] = {**record[1], "hostname": host}
        elif record[0] == sr.TAGS[sr.FrameRecord] and record[5] == "user":
            record[2:4] = [cited, line]
        out.append(record)
    return out + [sr.encode(d) for d in digests]


def write(path: Path, lines: list[list[Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    return path


def digest_of(path: Path, file: str | None = None) -> sr.SourceDigest:
    """The digest a recording would hold of ``path``'s content (as ``file``)."""
    data = path.read_bytes()
    return sr.SourceDigest(file or str(path), len(data), hashlib.sha256(data).hexdigest())


def wrong_digest(file: str) -> sr.SourceDigest:
    return sr.SourceDigest(file, 10, "0" * 64)


def endless_line(path: Path, gib: int = 6) -> Path:
    """A gzip spool of ``gib`` GiB once decompressed, without a newline after its first
    record's start, about 6 MB on disk: a MiB of one letter, compressed once, repeated."""
    start = gzip.compress(b'["hello",{"x":"', mtime=0)
    mib = gzip.compress(b"a" * 2**20, compresslevel=9, mtime=0)
    with path.open("wb") as out:
        out.write(start)
        for _ in range(gib * 1024):
            out.write(mib)
    return path


def empty_members(path: Path, first: bytes, members: int = 400_000) -> Path:
    """``first`` compressed, then ``members`` empty gzip members (20 bytes each)."""
    path.write_bytes(gzip.compress(first, mtime=0) + gzip.compress(b"", mtime=0) * members)
    return path


def deeply_nested(path: Path, depth: int = 200_000) -> Path:
    """The recording with a line of ``depth`` nested arrays after its first record."""
    lines = [json.dumps(r) for r in read_records(RECORDING)]
    path.write_text("\n".join([lines[0], "[" * depth + "]" * depth, *lines[1:]]) + "\n")
    return path


# -- ids, counts and numbers no recorder writes ------------------------------------------------
HUGE = 10**9  # one such id made the reader build a list as long as it: 7.8 GB, 61 s
# Records whose ids or counts a reader might size a list or a loop by, each set beyond any
# recording: appended to the recording, every one a record a stranger could write.
HUGE_RECORDS = {
    "a frame's id": ["frame", HUGE, "x.py", 1, "f", "user"],
    "a stack's id": ["stack", HUGE, [0]],
    "a frame a stack names": ["stack", 0, [HUGE, -HUGE, 0]],
    "an id that is no number": ["frame", "1e9", "x.py", 1, "f", "user"],
    "the world's size": ["dist", {"backend": "nccl", "rank": 0, "world_size": HUGE}],
    "the world's size in the run's facts": ["meta", {"rank": 0, "world_size": HUGE}],
    "a graph's node count": ["anatomy", 0, 1, {"nodes": HUGE, "edges": HUGE,
                                               "nodes_kept": True, "node_type": [0]}],
    "replays of a graph": ["progress", 1, {"replays": {"0": HUGE}}],
    "untimed calls": ["untimed", HUGE],
}


def with_lines(path: Path, extra: list[str], source: Path = RECORDING) -> Path:
    """``source``'s records (the recording's), then ``extra`` lines as written."""
    lines = [json.dumps(r) for r in read_records(source)]
    path.write_text("\n".join([*lines[:-1], *extra, lines[-1]]) + "\n")
    return path


def not_a_number(path: Path, source: Path = RECORDING) -> Path:
    """``source`` with NaN and Infinity, which JSON has no words for, in its memory and GPU
    samples (what the viewer's memory lane and a merged report computed with)."""
    text = gzip.decompress(source.read_bytes()).decode() if source.suffix == ".gz" \
        else source.read_text()
    lines = []
    for line in text.splitlines():
        if line.startswith(('["mem",', '["nvml",')):
            fields = line.rstrip("]").split(",")
            fields[-1] = "NaN" if line.startswith('["mem"') else "Infinity"
            line = ",".join(fields) + "]"
        lines.append(line)
    path.write_text("\n".join(lines) + "\n")
    return path
