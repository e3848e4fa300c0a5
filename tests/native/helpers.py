"""Running the injection library's recorded lines through the translator, as the
recording child does, into a spool and a trace."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from graphdoctor.record.native.translate import NativeEvents
from graphdoctor.record.recorder import new_recorder
from graphdoctor.trace.assemble import assemble_file
from graphdoctor.trace.model import Trace
from graphdoctor.trace.spool import records as sr
from graphdoctor.trace.spool.file import SpoolWriter

HERE = Path(__file__).resolve().parent


def recorded_lines(name: str) -> list[str]:
    """The lines the library wrote on an H200 for a fixture program (.devn-style capture:
    GRAPHDOCTOR_NATIVE_KEEP while fixtures/record.py's program ran again)."""
    with gzip.open(HERE / f"{name}.events.jsonl.gz", "rt", encoding="utf-8") as lines:
        return lines.read().splitlines()


def translated(lines: list[str], folder: Path) -> tuple[Trace, NativeEvents]:
    spool = SpoolWriter(folder / "native.spool.jsonl")
    spool.write(sr.Hello({"version": 1, "tool_version": "test", "pid": 1, "argv": [],
                          "target": "program", "target_kind": "path", "cwd": str(folder),
                          "mode": "default", "started_at": ""}))
    recorder = new_recorder(spool, "default")
    first = json.loads(lines[0])["t"] if lines else 0
    events = NativeEvents(recorder, clock0=first - 1_000)
    events.names.addr2line = None  # the modules named are the GPU machine's, not this one's
    for line in lines:
        events.line(line)
    events.finish()
    spool.write(sr.End({"exit_code": 0, "interrupted": False}))
    spool.close()
    return assemble_file(folder / "native.spool.jsonl"), events
