"""A spool read as it grows gives, at every moment, the trace of what was appended by then:
the same trace as the spool cut there and read whole; and a look at it changes nothing of
what is read after."""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import pytest

from graphdoctor.files.untrusted import TooLarge
from graphdoctor.trace.assemble import assemble_file
from graphdoctor.trace.spool.file import MAX_LINE_BYTES
from graphdoctor.trace.spool.follow import SpoolFollower
from tests.conftest import RECORDINGS

# a raw capture, a compiled run whose compile logs carry stacks as text, a failed capture
SPOOLS = ("launch_bound", "compile_graph_break", "item_in_capture")


def spool_bytes(name: str) -> bytes:
    return gzip.decompress((RECORDINGS / f"{name}.spool.jsonl.gz").read_bytes())


@pytest.mark.parametrize("name", SPOOLS)
def test_a_growing_spool_reads_as_the_spool_cut_there(name: str, tmp_path: Path) -> None:
    data, growing, cut = spool_bytes(name), tmp_path / "growing.jsonl", tmp_path / "cut.jsonl"
    follower = SpoolFollower(growing)
    chooser, written = random.Random(name), 0
    growing.write_bytes(b"")
    looks = 0
    while written < len(data):
        step = chooser.randint(1, max(2, len(data) // 6))  # cuts inside lines, too
        with growing.open("ab") as handle:
            handle.write(data[written:written + step])
        written += step
        follower.read()
        whole_lines = data[:written][:data[:written].rfind(b"\n") + 1]
        cut.write_bytes(whole_lines)
        assert follower.trace() == assemble_file(cut), (name, written)
        looks += 1
    assert looks > 3 and follower.trace() == assemble_file(growing)


def test_a_look_changes_nothing_read_after(tmp_path: Path) -> None:
    """Finishing a trace places the stacks read from log text after the recorded ones: done
    on the follower's own state, later frames of the spool would take their ids."""
    data, growing = spool_bytes("compile_graph_break"), tmp_path / "growing.jsonl"
    growing.write_bytes(b"")
    follower = SpoolFollower(growing)
    lines = data.splitlines(keepends=True)
    for start in range(0, len(lines), 7):
        with growing.open("ab") as handle:
            handle.write(b"".join(lines[start:start + 7]))
        follower.read()
        follower.trace()
    assert follower.trace() == assemble_file(growing)
    assert follower.records == len([line for line in lines if line.strip()])


def test_a_line_too_long_to_hold_counts_once_and_the_rest_reads_on(tmp_path: Path) -> None:
    data, growing = spool_bytes("item_in_capture"), tmp_path / "growing.jsonl"
    head, tail = data[:data.find(b"\n") + 1], data[data.find(b"\n") + 1:]
    growing.write_bytes(head)
    follower = SpoolFollower(growing)
    follower.read()
    with growing.open("ab") as handle:
        for _ in range(3):  # a line longer than any the child writes, in three looks
            handle.write(b"x" * (MAX_LINE_BYTES // 2))
            handle.flush()
            follower.read(most=MAX_LINE_BYTES)
        handle.write(b"\n" + tail)
    follower.read(most=len(tail) + 10)
    expected = assemble_file(RECORDINGS / "item_in_capture.spool.jsonl.gz")
    trace = follower.trace()
    assert trace.tables == expected.tables and trace.graphs == expected.graphs
    assert any("1 spool records could not be read" in n.why for n in trace.meta.not_recorded)


def test_a_gzip_spool_is_read_whole_and_is_finished(tmp_path: Path) -> None:
    path = RECORDINGS / "tiny_graph.spool.jsonl.gz"
    follower = SpoolFollower(path)
    assert follower.read() > 0 and follower.ended
    assert follower.read() == 0 and follower.trace() == assemble_file(path)


def test_a_strangers_spool_stops_past_its_budget(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("graphdoctor.trace.spool.follow.memory_budget", lambda size: 10_000)
    path = tmp_path / "strangers.jsonl"
    path.write_bytes(spool_bytes("launch_bound"))
    with pytest.raises(TooLarge):
        SpoolFollower(path, limited=True).read()
    assert SpoolFollower(path).read() > 0  # one's own is not metered
