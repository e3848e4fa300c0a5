"""The commands given a job's rank files: ``merge`` writes one report of the job; ``report``,
``view`` and ``export`` read the files directly and say which they read."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from graphdoctor.cli import main
from graphdoctor.facts.job_clock import job_clock
from graphdoctor.report import io
from tests.report.jobs import DEPARTING_RANK, TWO_NODES, rank_file


def invoke(*args: object, code: int = 0) -> Result:
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result


@pytest.fixture
def in_tmp(tmp_path: Path) -> Iterator[Path]:
    here = Path.cwd()
    os.chdir(tmp_path)
    try:
        yield tmp_path
    finally:
        os.chdir(here)


def test_merge_writes_one_report_of_the_job_that_reads_as_one(in_tmp: Path) -> None:
    result = invoke("merge", *(rank_file(r) for r in range(4)), "-o", in_tmp / "job.json")
    assert "wrote the report of 4 ranks to" in result.stderr
    assert result.stderr.startswith("graphdoctor: read ranks 0-3 from 4 files")
    merged = io.load(in_tmp / "job.json")
    assert merged.ranks == [0, 1, 2, 3]
    assert any(f.id == "GD402" and f.rank == DEPARTING_RANK for f in merged.diagnosis.findings)


def test_merge_names_its_report_after_the_ranks_and_never_writes_over_one(in_tmp: Path) -> None:
    invoke("merge", TWO_NODES)
    assert (in_tmp / "two_nodes.json").is_file()
    invoke("merge", rank_file(0), rank_file(1))
    (in_tmp / "job.json").write_text("mine")
    result = invoke("merge", rank_file(0), rank_file(1))
    assert "to job-2.json" in result.stderr and (in_tmp / "job.json").read_text() == "mine"


def test_merge_writes_over_the_file_o_names_only_with_force(in_tmp: Path) -> None:
    (in_tmp / "job.json").write_text("mine")
    refused = invoke("merge", rank_file(0), rank_file(1), "-o", "job.json", code=2)
    assert refused.stderr == ("graphdoctor: error: job.json exists; merge writes over it only "
                              "with --force\n")
    assert (in_tmp / "job.json").read_text() == "mine"
    invoke("merge", rank_file(0), rank_file(1), "-o", "job.json", "--force")
    assert io.load(in_tmp / "job.json").ranks == [0, 1]
    invoke("merge", rank_file(0), rank_file(1), "-o", os.devnull)  # a device: written to


def test_report_reads_several_files_and_shows_the_ranks_that_differ_first() -> None:
    result = invoke("report", TWO_NODES, "--width", "100")
    text = result.stdout
    ranks = text.index("\nRanks: 4 ranks on 1 host")
    assert text.index("rank 3 ", ranks) < text.index("ranks 0-2", ranks)
    assert "GD402 ranks-diverged (rank 3)" in text
    assert "read ranks 0-3 from 4 files" in result.stderr


def test_files_of_different_jobs_are_one_clear_error() -> None:
    other = TWO_NODES.parent.parent / "recordings" / "dist_healthy_capture.rank1.spool.jsonl.gz"
    result = invoke("report", rank_file(0), other, code=2)
    assert result.stderr.startswith("graphdoctor: error: ")
    assert "are not one job" in result.stderr and len(result.stderr.splitlines()) == 1


def test_view_without_a_terminal_prints_the_job(in_tmp: Path) -> None:
    result = invoke("view", *(rank_file(r) for r in range(4)))
    assert "Ranks: 4 ranks on 1 host" in result.stdout


def test_export_puts_every_rank_on_the_job_time_axis(in_tmp: Path) -> None:
    invoke("export", TWO_NODES, "-o", in_tmp / "job.trace.json")
    exported = json.loads((in_tmp / "job.trace.json").read_text())
    report = io.load(rank_file(0))
    clock = job_clock({r: io.load(rank_file(r)).trace for r in range(4)})
    assert set(clock.offsets.values()) != {0}  # the ranks started apart: offsets to show
    assert exported["otherData"]["clocks"] == "; ".join(clock.how)
    for rank in range(4):
        phases = [e for e in exported["traceEvents"] if e.get("cat") == "phase"
                  and e["pid"] == 100 * rank + 1]
        first = io.load(rank_file(rank)).trace.phases[0].start
        assert phases[0]["ts"] == pytest.approx((first + clock.offset(rank)) / 1000, abs=0.01)
    assert report.ranks == [0]
