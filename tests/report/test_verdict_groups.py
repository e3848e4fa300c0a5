"""Verdicts of many graphs from one line read as one group in every rendered output; the
JSON keeps a verdict per graph."""

from __future__ import annotations

import dataclasses

from graphdoctor.diagnose import diagnose_ranks
from graphdoctor.diagnose.findings import FASTER, SLOWER
from graphdoctor.report import schema, verdict_groups
from graphdoctor.report.document import build_ranks, to_json
from graphdoctor.report.render.markdown import render_markdown
from graphdoctor.report.render.summary import outcome_lines
from graphdoctor.report.render.text import render_text
from tests.report.helpers import plain, real
from tests.report.many_graphs import many_graphs_report, many_graphs_trace

GROUP_LINE = ("graphdoctor: 32 graphs (torch.cuda.graph, decode.py:88): faster 2.00×–5.10× "
              "(median 3.55×), replays 10–12 each, replay 100 µs, pool 12.0 MiB–43.0 MiB")


def test_many_graphs_at_one_line_make_one_group_with_their_ranges() -> None:
    rows = verdict_groups.rows(many_graphs_report())
    assert [(r.verdict.kind, len(r.members)) for r in rows] == [(FASTER, 32), (SLOWER, 0)]
    group = rows[0]
    assert group.verdict.speedup == 3.55
    assert [v.graph for v in group.members] == list(range(32))


def test_fewer_than_three_from_one_line_stay_apart() -> None:
    rows = verdict_groups.rows(many_graphs_report(count=2))
    assert [len(r.members) for r in rows] == [0, 0, 0]


def test_one_group_per_kind_at_one_line() -> None:
    report = many_graphs_report(count=6)
    verdicts = tuple(dataclasses.replace(v, kind=SLOWER, speedup=0.9) if v.graph < 3 else v
                     for v in report.diagnosis.verdicts)
    report = dataclasses.replace(report, diagnosis=dataclasses.replace(report.diagnosis,
                                                                       verdicts=verdicts))
    rows = verdict_groups.ranked(report)
    assert [(r.verdict.subject, r.verdict.kind) for r in rows if r.members] == [
        ("3 graphs (torch.cuda.graph, decode.py:88)", SLOWER),
        ("3 graphs (torch.cuda.graph, decode.py:88)", FASTER)]
    assert rows[0].verdict.summary.startswith("slower 0.90× (median 0.90×), replays 10–12 each")


def test_end_of_run_lines_show_one_line_per_group() -> None:
    lines = outcome_lines(many_graphs_report())
    assert lines[0] == GROUP_LINE
    assert len(lines) == 2 and lines[1].startswith("graphdoctor: graph 32 (")


def test_text_report_has_a_row_per_group_with_its_members() -> None:
    text = render_text(many_graphs_report(), width=200)
    assert "32 graphs (torch.cuda.graph, decode.py:88)" in text
    # the median is the speedup column's 3.55×, said once
    assert "3.55×     faster 2.00×–5.10×, replays 10–12 each" in text
    assert "members: graph 0 2.00×, graph 1 2.10×" in text
    assert "graph 5 (torch.cuda.graph" not in text  # a member is no row of its own


def test_markdown_report_has_a_row_per_group_and_its_members_folded() -> None:
    text = render_markdown(many_graphs_report())
    assert ("| 32 graphs (torch.cuda.graph, decode.py:88) | **faster** | 3.55× | faster "
            "2.00×–5.10×, replays 10–12 each") in text
    fold = text[text.index("<details><summary>32 graphs"):]
    fold = fold[:fold.index("</details>")]
    assert fold.count("\n- graph ") == 30 and "... and 2 more" in fold
    assert "- graph 0: 2.00× faster: eager 200.0 µs" in fold


def test_json_keeps_a_verdict_per_graph() -> None:
    assert len(to_json(many_graphs_report())["diagnosis"]["verdicts"]) == 33


def test_a_group_without_speedups_says_what_its_members_share() -> None:
    rows = [r for r in verdict_groups.rows(real("many_private_pools")) if r.members]
    assert [r.verdict.subject for r in rows] == [
        "8 graphs (torch.cuda.graph, many_private_pools.py:10)"]
    assert rows[0].verdict.summary.startswith(
        "unmeasured, replays 5 each, replay 69.9 µs–71.1 µs, pool 20.0 MiB–52.0 MiB; no eager "
        "run of the same code to compare with, so no speedup is claimed; to measure one")


def test_json_summary_lists_the_groups_and_the_schema_allows_them() -> None:
    data = plain(many_graphs_report())
    assert data["summary"]["verdict_groups"] == [{
        "subject": "32 graphs (torch.cuda.graph, decode.py:88)", "kind": FASTER, "rank": -1,
        "graphs": list(range(32)), "speedup": 3.55, "summary": GROUP_LINE.split(": ", 2)[2]}]
    schema.check(data)


def test_each_rank_has_its_own_groups() -> None:
    traces = {0: many_graphs_trace(4), 1: many_graphs_trace(4)}
    report = build_ranks(traces, diagnose_ranks(traces), read_line=lambda file, line: "")
    groups = [r for r in verdict_groups.rows_of_ranks(report) if r.members]
    assert [(r.verdict.subject, r.verdict.rank) for r in groups] == [
        ("rank 0: 4 graphs (torch.cuda.graph, decode.py:88)", 0),
        ("rank 1: 4 graphs (torch.cuda.graph, decode.py:88)", 1)]
    assert all({v.rank for v in r.members} == {r.verdict.rank} for r in groups)
    # alike on both ranks: one row, whose members are each rank's group
    across = [r for r in verdict_groups.rows(report) if r.ranks]
    assert [(r.verdict.subject, r.ranks) for r in across] == [
        ("ranks 0, 1: 4 graphs (torch.cuda.graph, decode.py:88)", (0, 1)),
        ("ranks 0, 1: graph 4 (torch.cuda.graph, decode.py:120)", (0, 1))]
    assert [v.subject for v in across[0].members] == [g.verdict.subject for g in groups]
