"""The terminal summary and the markdown of a distributed run say which rank each finding,
graph, exception and phase comes from, and cover every rank, not only the first."""

from __future__ import annotations

import dataclasses
import re

from graphdoctor.report.render import common
from graphdoctor.report.render.markdown import render_markdown
from graphdoctor.report.render.text import render_text
from graphdoctor.trace import endings
from graphdoctor.trace.model import RunStatus
from tests.report.helpers import real

FAILS = "dist_rank_capture_fails"  # rank 1's capture fails; rank 0's works
HUNG = "dist_extra_allreduce_in_capture"


def flat(text: str) -> str:
    return " ".join(text.split())


def test_text_names_the_rank_of_each_finding() -> None:
    text = flat(render_text(real(FAILS), width=120))
    assert "GD101 sync-in-capture (rank 1): `.item()`" in text
    assert "GD402 ranks-diverged (rank 0):" in text
    single = flat(render_text(real("item_in_capture"), width=120))
    assert "GD101 sync-in-capture: " in single and "(rank" not in single


def test_text_lists_every_ranks_graphs_exceptions_and_phases() -> None:
    text = render_text(real(FAILS), width=160)
    graphs = text[text.index("Graphs (2)"):text.index("Exceptions")]
    rows = [line.split()[:5] for line in graphs.splitlines()[3:5]]
    assert rows == [["0", "0", "torch.cuda.graph", "captured", "dist_rank_capture_fails.py:21"],
                    ["1", "0", "torch.cuda.graph", "failed", "dist_rank_capture_fails.py:21"]]
    assert "rank 1 uncaught" in text  # rank 1's error: rank 0 raised none
    assert "rank 0: eager" in text and "rank 1: eager" in text
    assert "4 collectives," in text and "collectivess" not in text


def test_the_header_says_how_many_ranks_and_how_each_ended_when_they_differ() -> None:
    report = real(FAILS)
    assert "The run (2 ranks, nccl backend) exited with code 1 after" in flat(render_text(report))
    rank1 = dataclasses.replace(report.trace_of(1), status=RunStatus(True, "exited", 0))
    differing = dataclasses.replace(report, other_ranks={1: rank1})
    outcome = common.run_outcome(differing)
    assert outcome == ("(2 ranks, nccl backend) ended differently: rank 0 exited with code 1; "
                       "rank 1 exited with code 0")  # each rank's time: Phases and events
    assert common.run_outcome(real("item_in_capture")) == endings.outcome(real("item_in_capture")
                                                                       .trace)


def test_markdown_names_the_rank_of_findings_and_their_evidence() -> None:
    text = render_markdown(real(FAILS))
    assert "**🔴 error · `GD101` sync-in-capture · rank 1:**" in text
    assert "- rank 1 `syncs[1]`" in text and "- rank 0 `collectives[3]`" in text
    assert "· rank" not in render_markdown(real("item_in_capture"))


def test_markdown_covers_every_rank() -> None:
    text = render_markdown(real(FAILS))
    assert "| Rank | Graph | API | Status |" in text
    assert re.search(r"^\| 1 \| 0 \| torch\.cuda\.graph \| failed \|", text, re.M)
    assert "**At uncaught on rank 1**" in text
    assert "| 1 | capture |" in text and "Rank 1 events:" in text
    assert "| ranks | 0, 1 of 2 |" in text and "| rank |" not in text
    hung = render_markdown(real(HUNG))
    for rank in (0, 1):  # both were stopped at the time-out: each left its stacks
        assert f"Stacks when the run ended (faulthandler, rank {rank})" in hung


def test_text_shows_where_each_ranks_threads_were() -> None:
    text = render_text(real(HUNG), width=200)
    stacks = [line.strip() for line in
              text.split("Stacks when the run ended\n", 1)[1].split("\n\n")[0].splitlines()]
    assert stacks == [
        "rank 0:",
        "the main thread: dist_extra_allreduce_in_capture.py:29 in <module>",
        "called: torch/distributed/distributed_c10d.py:2319 in destroy_process_group",
        "3 other threads (graphdoctor's, Python's or torch's own) left out",
        "rank 1:",
        "the main thread: dist_extra_allreduce_in_capture.py:28 in <module>",
        "called: torch/cuda/__init__.py:1162 in synchronize",
        "3 other threads (graphdoctor's, Python's or torch's own) left out",
        "(in full: graphdoctor report --format markdown)"]


def test_text_leaves_the_stacks_out_of_a_run_that_ended_well() -> None:
    assert "Stacks when the run ended" not in render_text(real("dist_healthy_capture"))
