"""Reading a spool cut short: every record before the cut, whether the spool is plain or a
gzip copy."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from graphdoctor.trace.spool import read_records


def tags(path: Path) -> list[str]:
    return [r[0] for r in read_records(path)]


def test_a_spool_cut_mid_record_keeps_everything_before(tmp_path: Path) -> None:
    path = tmp_path / "s.spool"
    path.write_text('["hello",{"version":1}]\n["gc",1,2,0,0,0]\n["log",3,"torch._inductor.x","WAR')
    assert tags(path) == ["hello", "gc"]


@pytest.mark.parametrize("cut", [0.5, 0.9, 0.999])
def test_a_gzip_spool_cut_short_keeps_everything_before(tmp_path: Path, cut: float) -> None:
    lines = [f'["gc",{t},100,0,0,0]\n' for t in range(20_000)]
    whole = gzip.compress("".join(lines).encode())
    path = tmp_path / "s.spool.gz"
    path.write_bytes(whole[:int(len(whole) * cut)])
    got = list(read_records(path))
    assert got and [r[1] for r in got] == list(range(len(got)))  # in order, none torn
    assert len(got) >= cut * 20_000 - 2000


def test_a_damaged_gzip_spool_keeps_everything_before(tmp_path: Path) -> None:
    whole = bytearray(gzip.compress(b'["hello",{}]\n' * 50_000, compresslevel=1))
    whole[len(whole) // 2:len(whole) // 2 + 64] = b"\xff" * 64
    path = tmp_path / "s.spool.gz"
    path.write_bytes(bytes(whole))
    assert 0 < len(tags(path)) < 50_000


def test_concatenated_gzip_members_are_all_read(tmp_path: Path) -> None:
    path = tmp_path / "s.spool.gz"
    path.write_bytes(gzip.compress(b'["hello",{}]\n') + gzip.compress(b'["end",{}]\n'))
    assert tags(path) == ["hello", "end"]

