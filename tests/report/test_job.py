"""One report of a job from the files its ranks wrote apart (graphdoctor.report.job and
.opening): on the two-node job recorded with two torchrun launches, and on the GPU
recordings' ranks given one file each."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from graphdoctor.errors import ReportError
from graphdoctor.report import job, rank_groups
from graphdoctor.report.document import Report
from graphdoctor.report.opening import open_report
from graphdoctor.report.recorded import report_from_spools
from graphdoctor.report.redact import redact
from graphdoctor.trace.names import RUN_ID_ENV
from tests.conftest import RECORDINGS
from tests.report.jobs import (
    DEPARTING_GROUP,
    DEPARTING_LINE,
    DEPARTING_RANK,
    TWO_NODES,
    rank_file,
    two_node_rank,
)

GPU_JOBS = ["dist_healthy_capture", "dist_branch_extra_collective", "dist_rank_capture_fails",
            "dist_extra_allreduce_in_capture", "dist_barrier_in_capture"]


def said(report: Report) -> list[tuple[str, int, str]]:
    return sorted((f.id, f.rank, f.title) for f in report.diagnosis.findings)


def test_a_folder_of_rank_reports_is_one_job_that_finds_the_rank_that_departed() -> None:
    opened = open_report([TWO_NODES])
    report = opened.report
    assert report.ranks == [0, 1, 2, 3] and len(opened.files) == 4
    [diverged] = [f for f in report.diagnosis.findings if f.id == "GD402"]
    assert diverged.rank == DEPARTING_RANK and diverged.location is not None
    assert diverged.location.line == DEPARTING_LINE
    assert f"group {DEPARTING_GROUP}: rank 3 issued all_reduce" in diverged.title
    assert diverged.title.endswith("; rank 2 issued none")  # ranks 0, 1 are not in the pair
    assert [f.id for f in report.diagnosis.findings].count("GD402") == 1
    assert opened.said().startswith("read ranks 0-3 from 4 files")


def test_no_rank_report_alone_knows_the_job_diverged() -> None:
    alone = [two_node_rank(rank) for rank in range(4)]
    assert all(f.id != "GD402" for report in alone for f in report.diagnosis.findings)


def test_ranks_are_ordered_by_global_rank_whatever_order_the_files_come_in() -> None:
    given = [Path(rank_file(rank)) for rank in (3, 1, 0, 2)]
    report = open_report(given).report
    assert report.ranks == [0, 1, 2, 3] and report.trace.meta.rank == 0
    assert said(report) == said(open_report([TWO_NODES]).report)


@pytest.mark.parametrize("name", GPU_JOBS)
def test_ranks_given_one_file_each_say_what_the_run_said_of_them_together(name: str) -> None:
    spools = sorted(RECORDINGS.glob(f"{name}.rank*.spool.jsonl.gz"))
    together = report_from_spools(spools, own=False)
    apart = open_report(spools).report
    assert said(apart) == said(together) and said(apart)


def test_a_fixture_note_is_followed_to_its_ranks_recordings() -> None:
    opened = open_report([RECORDINGS / "dist_healthy_capture.json"])
    assert [p.name for p in opened.files] == ["dist_healthy_capture.rank0.spool.jsonl.gz",
                                              "dist_healthy_capture.rank1.spool.jsonl.gz"]
    assert opened.report.ranks == [0, 1]
    single = open_report([RECORDINGS / "launch_bound.json"])
    assert [p.name for p in single.files] == ["launch_bound.spool.jsonl.gz"]
    assert single.said() == (f"read {RECORDINGS / 'launch_bound.spool.jsonl.gz'} (the "
                             f"recording {RECORDINGS / 'launch_bound.json'} stands for)")
    assert open_report([Path(rank_file(0))]).said() == ""


def test_a_note_names_a_recording_only_in_its_own_folder(tmp_path: Path) -> None:
    note = tmp_path / "x.json"
    note.write_text('{"scenario": "../recordings/launch_bound", "recorded_at": "2026-11-28"}')
    with pytest.raises(ReportError, match="not a graphdoctor report"):
        open_report([note])  # not a plain name: read as a report, which it is not
    note.write_text('{"scenario": "gone", "recorded_at": "2026-11-28"}')
    with pytest.raises(ReportError, match="its recording \\(gone.spool.jsonl.gz\\) is not"):
        open_report([note])


def test_files_of_different_jobs_are_not_one_job() -> None:
    other = RECORDINGS / "dist_healthy_capture.rank1.spool.jsonl.gz"
    with pytest.raises(ReportError, match=r"are not one job: world sizes differ \(4 and 2\)"):
        open_report([Path(rank_file(0)), other])
    zero = RECORDINGS / "dist_branch_extra_collective.rank0.spool.jsonl.gz"
    with pytest.raises(ReportError, match="are not one job: scripts differ"):
        open_report([zero, other])


def with_trace(report: Report, **meta: object) -> Report:
    trace = report.trace
    return dataclasses.replace(report, trace=dataclasses.replace(
        trace, meta=dataclasses.replace(trace.meta, **meta)))  # type: ignore[arg-type]


def test_another_launch_of_the_same_script_is_not_one_job() -> None:
    rank1 = two_node_rank(1)
    env = tuple((k, "another-launch" if k == RUN_ID_ENV else v) for k, v in rank1.trace.meta.env)
    with pytest.raises(ReportError, match=f"{RUN_ID_ENV} values differ \\(two-nodes-demo and "
                                          "another-launch\\)"):
        job.combine([(two_node_rank(0), "a"), (with_trace(rank1, env=env), "b")])


def test_ranks_that_ran_a_day_apart_are_not_one_job() -> None:
    rank1 = two_node_rank(1)
    later = with_trace(rank1, clock_unix_ns=rank1.trace.meta.clock_unix_ns + 86_400 * 10**9,
                       env=())
    with pytest.raises(ReportError, match="not one job: times differ"):
        job.combine([(two_node_rank(0), "a"), (later, "b")])


def test_a_rank_given_twice_is_refused() -> None:
    with pytest.raises(ReportError, match="rank 2 is in both"):
        open_report([Path(rank_file(2)), Path(rank_file(2))])


def test_a_run_that_was_not_distributed_has_nothing_to_combine_with() -> None:
    with pytest.raises(ReportError, match="not a rank of a distributed run"):
        open_report([Path(rank_file(0)), RECORDINGS / "launch_bound.spool.jsonl.gz"])


def test_ranks_missing_from_the_files_are_said() -> None:
    opened = open_report([Path(rank_file(1)), Path(rank_file(3))])
    assert [rank for run in rank_groups.missing_ranks(opened.report) for rank in run] == [0, 2]
    assert rank_groups.missing_line(opened.report).startswith("ranks 0, 2 of the job's 4 are not "
                                                              "in this report")
    assert opened.said().endswith("ranks 0, 2 of the job are not among them")


def test_redacted_rank_reports_still_combine_and_stay_redacted() -> None:
    reports = [(redact(two_node_rank(rank)), f"r{rank}") for rank in range(4)]
    combined = job.combine(reports)
    assert combined.redacted and combined.ranks == [0, 1, 2, 3]


def test_a_folder_gives_its_reports_and_passes_over_other_files(tmp_path: Path) -> None:
    for rank in range(4):
        shutil.copy(rank_file(rank), tmp_path)
    (tmp_path / "notes.txt").write_text("not a report")
    (tmp_path / "node0.log").write_text("torchrun output")
    assert open_report([tmp_path]).report.ranks == [0, 1, 2, 3]
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ReportError, match="no graphdoctor report or recording"):
        open_report([empty])


def test_the_job_says_where_its_ranks_ran_and_how_their_times_line_up() -> None:
    report = open_report([TWO_NODES]).report
    host = report.trace.meta.hostname
    assert rank_groups.hosts_line(report) == f"4 ranks on 1 host ({host}: 0-3)"
    assert rank_groups.clock_lines(report) == (
        f"host {host}: ranks set by their wall clock at start",)
    groups = rank_groups.rank_groups(report)
    assert [g.ranks for g in groups] == [(3,), (0, 1, 2)]
    assert groups[0].said.startswith("exited with code 1") and "GD402" in groups[0].said
