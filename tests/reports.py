"""Reports built from the committed GPU recordings, as ``graphdoctor run`` would have
written them, with source lines read from this checkout's copies of the scripts."""

from __future__ import annotations

import functools
import linecache
from pathlib import Path

from graphdoctor.diagnose import diagnose
from graphdoctor.report.document import Report, build
from graphdoctor.trace.assemble import assemble_file
from graphdoctor.trace.model import Trace
from tests.conftest import RECORDINGS, ROOT

SCRIPTS = ROOT / "fixtures" / "scripts"


def scenario_names() -> list[str]:
    suffix = ".spool.jsonl.gz"
    return sorted(p.name.removesuffix(suffix) for p in RECORDINGS.glob("*" + suffix))


@functools.cache
def trace_for(name: str) -> Trace:
    return assemble_file(RECORDINGS / f"{name}.spool.jsonl.gz")


def local_line(file: str, number: int) -> str:
    """A line of a recorded script: the GPU machine's path mapped into this checkout."""
    local = SCRIPTS / Path(file).name
    return linecache.getline(str(local) if local.exists() else file, number)


def report_for(name: str) -> Report:
    trace = trace_for(name)
    return build(trace, diagnose(trace), read_line=local_line)
