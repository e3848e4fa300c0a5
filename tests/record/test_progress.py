"""The progress line of a long run, read from spools as the recorder writes them: the phase,
the graphs so far and the replays, said when they change, on a terminal only."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from graphdoctor.launch import progress
from graphdoctor.launch.progress import FIRST_AFTER_S, QUIET_FOR_S, ProgressLines
from graphdoctor.trace.names import CAPTURE_FAILED, CAPTURED
from graphdoctor.trace.spool import records as sr
from graphdoctor.trace.spool.file import encoded


def append(spool: Path, *records: sr.SpoolRecord, torn: bytes = b"") -> None:
    with spool.open("ab") as file:
        file.write((encoded(list(records)) if records else b"") + torn)


def begun(graph: int) -> sr.GraphBegin:
    return sr.GraphBegin({"id": graph, "t": 1, "api": "torch.cuda.graph"})


def ended(graph: int, status: str = CAPTURED) -> sr.GraphEnd:
    return sr.GraphEnd({"id": graph, "t": 2, "status": status})


def replays(counts: dict[int, int]) -> sr.Progress:
    return sr.Progress(3, {"replays": {str(g): n for g, n in counts.items()}})


def said(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return capsys.readouterr().err.splitlines()


def test_a_line_when_the_phase_or_the_graphs_change(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    spool = tmp_path / "run.spool.jsonl"
    spool.touch()
    lines = ProgressLines([spool])
    lines.tick(1.0)
    assert said(capsys) == []  # a short run says nothing
    lines.tick(FIRST_AFTER_S)
    assert said(capsys) == ["graphdoctor: 0:05 running"]
    append(spool, begun(0))
    lines.tick(FIRST_AFTER_S + 1)  # too soon after the last line: read later
    lines.tick(FIRST_AFTER_S + 2)
    assert said(capsys) == ["graphdoctor: 0:07 capturing"]
    append(spool, ended(0), begun(1), ended(1, CAPTURE_FAILED), replays({0: 12_000}))
    lines.tick(65.0)
    assert said(capsys) == ["graphdoctor: 1:05 replaying · 1 graph captured, 1 failed · "
                            "12,000 replays"]
    append(spool, replays({0: 13_000}))  # more replays alone: said only after a while
    lines.tick(70.0)
    assert said(capsys) == []
    lines.tick(65.0 + QUIET_FOR_S)
    assert said(capsys) == ["graphdoctor: 1:35 replaying · 1 graph captured, 1 failed · "
                            "13,000 replays"]


def test_ranks_are_counted_together_and_torn_lines_wait(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spools = [tmp_path / "rank0.spool.jsonl", tmp_path / "rank1.spool.jsonl"]
    append(spools[0], begun(0), ended(0), replays({0: 5}))
    torn = encoded([ended(0)]).strip()
    append(spools[1], begun(0), torn=torn[:10])  # the child is writing this line
    lines = ProgressLines([*spools, tmp_path / "not yet created.spool.jsonl"])
    lines.tick(FIRST_AFTER_S)
    assert said(capsys) == ["graphdoctor: 0:05 capturing · 1 graph captured · 5 replays"]
    append(spools[1], torn=torn[10:] + b"\n")
    lines.tick(FIRST_AFTER_S + QUIET_FOR_S)
    assert said(capsys) == ["graphdoctor: 0:35 replaying · 2 graphs captured · 5 replays"]


def test_records_of_another_shape_are_passed_over(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    spool = tmp_path / "run.spool.jsonl"
    spool.write_bytes(b'["graph",{"no id":1}]\n["graph_end",[]]\n["progress",1,{"replays":'
                      b'{"x":1}}]\n["graph",\n' + encoded([begun(3)]))
    ProgressLines([spool]).tick(FIRST_AFTER_S)
    assert said(capsys) == ["graphdoctor: 0:05 capturing"]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_only_on_a_terminal_and_not_with_quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stderr", io.StringIO())
    assert not progress.wanted(quiet=False)
    monkeypatch.setattr("sys.stderr", Terminal())
    assert progress.wanted(quiet=False) and not progress.wanted(quiet=True)
