"""The report of a recording still being made says only what is known while it runs: the run
is running (not "ended without an exit record"), a graph still capturing has neither verdict
nor finding, and the rules that judge how a run ended wait for its end. Spools cut at a
record boundary are what a live reader sees then (the committed GPU recordings, in time
order)."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

from graphdoctor.report.live import HELD_TILL_THE_END, LiveFeed, follow_spools
from graphdoctor.trace.endings import RUNNING
from graphdoctor.trace.names import CUDA_STATE_UNREAD, STILL_CAPTURING
from tests.conftest import RECORDINGS


def cut(spool: Path, folder: Path, keep: int | None) -> Path:
    """The spool's first ``keep`` records (None: those before the parent's run_end)."""
    lines = gzip.decompress(spool.read_bytes()).splitlines(keepends=True)
    if keep is None:
        keep = next(i for i, line in enumerate(lines) if line.startswith(b'["run_end",'))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / spool.name.removesuffix(".gz")
    path.write_bytes(b"".join(lines[:keep]))
    return path


def test_a_graph_still_capturing_has_no_verdict_and_no_finding_yet(tmp_path: Path) -> None:
    spool = RECORDINGS / "launch_bound.spool.jsonl.gz"
    lines = gzip.decompress(spool.read_bytes()).splitlines()
    inside = next(i for i, line in enumerate(lines) if line.startswith(b'["graph",')) + 1
    report = LiveFeed([cut(spool, tmp_path, inside)], own=False).look()
    assert report is not None
    assert [g.status for g in report.trace.graphs] == [STILL_CAPTURING]
    assert report.trace.status.reason == RUNNING and "running" in report.trace.status.message
    assert not report.diagnosis.verdicts and not report.diagnosis.findings
    assert not [n for n in report.trace.meta.not_recorded if n.what == CUDA_STATE_UNREAD]


def test_a_job_in_its_teardown_is_not_called_hung_until_it_ends(tmp_path: Path) -> None:
    """dist4_subgroup_diverge: every rank in destroy_process_group() at the end, the run
    timed out. Cut before the parent's run_end, the ranks are simply there; whole, the
    teardown hang and the job's hang are found."""
    spools = sorted(RECORDINGS.glob("dist4_subgroup_diverge.rank*.spool.jsonl.gz"))
    held = {rule.id for rule in HELD_TILL_THE_END}
    running = LiveFeed([cut(s, tmp_path / "live", None) for s in spools], own=False).look()
    ended = LiveFeed([cut(s, tmp_path / "all", 10**9) for s in spools], own=False).look()
    assert running is not None and ended is not None
    assert running.ranks == ended.ranks == [0, 1, 2, 3]
    assert not {f.id for f in running.diagnosis.findings} & held
    assert {"GD404", "GD405"} <= {f.id for f in ended.diagnosis.findings}
    assert "GD402" in {f.id for f in running.diagnosis.findings}  # the divergence is known


def test_nothing_recorded_yet_is_no_report(tmp_path: Path) -> None:
    empty = tmp_path / "empty.spool.jsonl"
    empty.write_bytes(b"")
    feed = follow_spools([empty])
    assert feed.look() is None and not feed.ended


def graphdoctor(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "graphdoctor", *args], capture_output=True,
                          text=True, timeout=120)


def test_view_follow_without_a_terminal_prints_the_summary_so_far(tmp_path: Path) -> None:
    spool = cut(RECORDINGS / "launch_bound.spool.jsonl.gz", tmp_path, 1600)
    done = graphdoctor("view", "--follow", str(spool))
    assert done.returncode == 0, done.stderr
    assert "is still running" in done.stdout and "faster" in done.stdout


def test_view_follow_refuses_what_is_not_a_recording_in_one_line(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    report.write_text('{"format": "graphdoctor-report"}')
    for args, said in [((str(tmp_path / "missing.spool.jsonl"),), "no such file"),
                       ((str(report),), "not a recording"), ((), "needs the recording")]:
        done = graphdoctor("view", "--follow", *args)
        assert done.returncode == 2 and said in done.stderr and "Traceback" not in done.stderr
