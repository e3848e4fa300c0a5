"""A stranger's spool with odd input events: a stack id that is not one (a string, a list,
null, one no stack has) reads as unknown, and no rule fails on it."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from graphdoctor.diagnose import diagnose
from graphdoctor.trace.assemble import assemble_file
from graphdoctor.trace.model import NONE
from tests.conftest import RECORDINGS


@pytest.mark.parametrize("dropped", ["x", [1], None, True, 10**12, -5])
def test_an_odd_dropped_stack_reads_as_unknown(tmp_path: Path, dropped: object) -> None:
    lines = gzip.decompress((RECORDINGS / "real_rebound_batches_tv_infer.spool.jsonl.gz")
                            .read_bytes()).decode().splitlines()
    edited = [json.dumps([*json.loads(line)[:-1], dropped]) if line.startswith('["input"')
              else line for line in lines]
    spool = tmp_path / "odd.spool.jsonl"
    spool.write_text("\n".join(edited) + "\n")
    trace = assemble_file(spool)
    [event] = trace.input_events
    assert isinstance(event.dropped, int) and not isinstance(event.dropped, bool)
    if not isinstance(dropped, int) or isinstance(dropped, bool):
        assert event.dropped == NONE
    findings = diagnose(trace).findings
    assert not [f for f in findings if f.id == "GD000"]
    assert [f.id for f in findings if f.graph == event.graph and f.id == "GD302"] == ["GD302"]
