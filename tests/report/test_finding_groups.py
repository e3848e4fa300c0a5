"""A finding alike on several ranks is one finding that names the ranks, in the text, the
markdown, the JSON (where each rank's own finding stays) and the viewer; alike verdicts of
a job's ranks are one row; a job of 64 ranks stays a short report."""

from __future__ import annotations

import dataclasses
import json

from graphdoctor.diagnose.findings import ERROR, FAILED, Finding, Location
from graphdoctor.report import io, schema, verdict_groups
from graphdoctor.report.document import to_json
from graphdoctor.report.finding_groups import finding_groups
from graphdoctor.report.render.markdown import render_markdown
from graphdoctor.report.render.text import render_text
from tests.report.jobs import job_of_64
from tests.reports import report_for

LINE = Location("/root/x.py", 40, "<module>")


def finding(rank: int, title: str = "destroy_process_group() at x.py:40 never returned",
            line: int = 40, rule: str = "GD405", count: int = 1) -> Finding:
    return Finding(rule, "teardown-hang", ERROR, FAILED, title, "why", "fix", rank=rank,
                   location=dataclasses.replace(LINE, line=line), count=count)


def test_alike_findings_of_several_ranks_are_one_naming_them() -> None:
    groups = finding_groups([finding(0), finding(1), finding(2), finding(3, line=39)])
    assert [(g.ranks, g.named) for g in groups] == [((0, 1, 2), "ranks 0-2"), ((3,), "rank 3")]
    assert groups[0].same_figures and groups[0].whose == "ranks 0-2"


def test_figures_that_differ_by_rank_group_and_say_whose_are_shown() -> None:
    groups = finding_groups([finding(rank, f"synchronize at x.py:40 syncs {n} times", count=n)
                             for rank, n in enumerate([199, 200, 198])])
    assert len(groups) == 1 and groups[0].ranks == (0, 1, 2)
    assert not groups[0].same_figures
    assert groups[0].whose == "ranks 0-2, the figures rank 0's"


def test_other_rules_lines_or_words_stay_apart_and_a_rank_is_never_grouped_with_itself(
) -> None:
    findings = [finding(0), finding(1, rule="GD404"), finding(2, title="another title"),
                finding(0), finding(1)]
    groups = finding_groups(findings)
    assert [g.ranks for g in groups] == [(0, 1), (1,), (2,), (0,)]
    assert [g.indices for g in groups] == [(0, 4), (1,), (2,), (3,)]


def test_a_single_process_reports_findings_stay_as_they_are() -> None:
    findings = [finding(-1), finding(-1)]
    groups = finding_groups(findings)
    assert [(g.ranks, g.named, g.members) for g in groups] == [((), "", (findings[0],)),
                                                              ((), "", (findings[1],))]


def test_the_evidence_of_a_group_is_every_members_each_naming_its_rank() -> None:
    report = report_for("dist4_subgroup_diverge")
    group = next(g for g in finding_groups(report.diagnosis.findings) if g.finding.id == "GD405")
    assert group.ranks == (0, 1, 2)
    assert {e.rank for e in group.finding.evidence} == {0, 1, 2}
    assert len(group.finding.evidence) == sum(len(m.evidence) for m in group.members)


def test_text_and_markdown_show_the_teardown_hang_of_three_ranks_once() -> None:
    """dist4_subgroup_diverge listed GD405 "destroy_process_group() at
    dist4_subgroup_diverge.py:40 never returned ..." three times, once per rank."""
    report = report_for("dist4_subgroup_diverge")
    assert sum(f.id == "GD405" for f in report.diagnosis.findings) == 3  # each rank's kept
    text = render_text(report, width=100, color=False)
    assert text.count("GD405 teardown-hang") == 1
    assert "GD405 teardown-hang (ranks 0-2): destroy_process_group()" in text
    markdown = render_markdown(report)
    assert markdown.count("`GD405` teardown-hang") == 1
    assert "`GD405` teardown-hang · ranks 0-2:**" in markdown


def test_the_json_lists_the_group_and_keeps_each_ranks_finding() -> None:
    report = report_for("dist4_subgroup_diverge")
    data = json.loads(io.dumps(report))
    schema.check(data)
    groups = data["summary"]["finding_groups"]
    gd405 = [g for g in groups if g["id"] == "GD405"]
    assert len(gd405) == 1 and gd405[0]["ranks"] == [0, 1, 2] and gd405[0]["same_figures"]
    members = [data["diagnosis"]["findings"][i] for i in gd405[0]["findings"]]
    assert [(m["id"], m["rank"]) for m in members] == [("GD405", 0), ("GD405", 1), ("GD405", 2)]
    assert io.loads(io.dumps(report)).diagnosis == report.diagnosis  # read back as written


# -- a job of 64 ranks -----------------------------------------------------------------------
def test_a_job_of_64_ranks_that_all_failed_alike_is_one_verdict_and_one_finding() -> None:
    job = job_of_64()
    assert sum(f.id == "GD101" for f in job.diagnosis.findings) == 64
    text = render_text(job, width=100, color=False)
    assert text.count("GD101 sync-in-capture") == 1
    assert "GD101 sync-in-capture (ranks 0-63): barrier() is not permitted" in text
    assert "ranks 0-63: graph 0" in text and "rank 5: graph 0" not in text
    assert len(text.splitlines()) < 100, len(text.splitlines())
    rows = verdict_groups.rows(job)
    assert [(r.ranks, len(r.members)) for r in rows] == [(tuple(range(64)), 64)]
    markdown = render_markdown(job)
    assert markdown.count("`GD101` sync-in-capture") == 1 and "ranks 0-63" in markdown


def test_the_json_of_the_job_names_the_verdicts_ranks() -> None:
    data = to_json(job_of_64())
    schema.check(json.loads(json.dumps(data)))
    across = [g for g in data["summary"]["verdict_groups"] if "ranks" in g]
    assert [(g["ranks"], g["graphs"]) for g in across] == [(list(range(64)), [0] * 64)]
    assert len(data["diagnosis"]["verdicts"]) == 64
