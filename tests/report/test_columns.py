"""Everything fits the terminal: every command's help, `rules`, `explain` and the text
report, at 80 and 120 columns (COLUMNS, as a terminal or a pipe sets it), with no line
ending in spaces."""

from __future__ import annotations

import re

import click
import pytest
from click.testing import CliRunner

from graphdoctor.cli import main
from graphdoctor.diagnose.rules import ALL_RULES
from graphdoctor.report.render import common
from graphdoctor.report.render.text import render_text
from tests.reports import report_for, scenario_names, scenario_params

COMMANDS = ["", *main.list_commands(click.Context(main))]  # imported as they are used
STYLE = re.compile(r"\x1b\[[0-9;]*m")


def output(*args: str, columns: int) -> str:
    result = CliRunner(env={"COLUMNS": str(columns)}).invoke(
        main, list(args), catch_exceptions=False, prog_name="graphdoctor")
    assert result.exit_code == 0, result.output
    return result.stdout


def too_wide(text: str, columns: int) -> list[str]:
    lines = [STYLE.sub("", line) for line in text.splitlines()]
    return [line for line in lines if len(line) > columns or line.endswith(" ")]


@pytest.mark.parametrize("columns", [80, 120])
@pytest.mark.parametrize("command", COMMANDS)
def test_help_fits(command: str, columns: int) -> None:
    assert too_wide(output(*filter(None, [command]), "--help", columns=columns), columns) == []


@pytest.mark.parametrize("columns", [80, 120])
def test_rules_and_every_explanation_fit(columns: int) -> None:
    listed = output("rules", columns=columns)
    assert too_wide(listed, columns) == [] and len(listed.splitlines()) >= len(ALL_RULES)
    for rule in ALL_RULES:
        explained = output("explain", rule.id, columns=columns)
        assert too_wide(explained, columns) == [], rule.id
        assert "``" not in explained  # shown as `code`, not reStructuredText


def test_rules_follow_columns_when_piped() -> None:
    assert max(map(len, output("rules", columns=200).splitlines())) > 120
    assert max(map(len, output("rules", columns=80).splitlines())) <= 80


@pytest.mark.parametrize("name", scenario_params(scenario_names()))
def test_every_recordings_text_report_fits(name: str) -> None:
    report = report_for(name)
    for columns, colour in ((80, False), (80, True), (120, False)):
        assert too_wide(render_text(report, width=columns, color=colour), columns) == []


def graphs_table(text: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Graphs ("))
    end = next((i for i in range(start + 1, len(lines)) if not lines[i]), len(lines))
    return lines[start + 3:end]


@pytest.mark.parametrize("name", ["dist_extra_allreduce_in_capture", "compile_healthy",
                                  "healthy_make_graphed_callables", "many_private_pools"])
@pytest.mark.parametrize("columns", [80, 100, 120, 160])
def test_the_graphs_table_breaks_no_name_where_it_fits_whole(name: str, columns: int) -> None:
    """The API's and the file's names are cut only where the narrow table cannot hold the
    longest (at 80 columns, "dist_extra_allreduce_in_capture.py:21" beside the rank)."""
    rows = graphs_table(render_text(report_for(name), width=columns))
    cut = [row for row in rows if re.search(r"torch\.(?!cuda\.graph|compile)|_$|\.p$", row)]
    breakable = columns == 80 and name.startswith("dist_")
    assert cut == [] or breakable, "\n".join(rows)


@pytest.mark.parametrize("name", scenario_params(scenario_names()))
def test_the_graphs_table_counts_replays_as_the_verdicts_do(name: str) -> None:
    """Replays the run ended before timing (a hang) count in both: a verdict that says
    "replayed 5 times" is never beside a table that says 0."""
    report = report_for(name)
    said = {(v.rank, v.graph): int(m.group(1)) for v in report.diagnosis.verdicts
            if (m := re.search(r"replayed ([\d,]+) times", v.summary.replace(",", "")))}
    for rank, _trace, graph, stats in common.ranked_graphs(report):
        if (rank, graph.id) in said:
            assert said[rank, graph.id] == (stats.count if stats else 0), (rank, graph.id)


def stderr_of(*args: str, columns: int) -> str:
    result = CliRunner(env={"COLUMNS": str(columns)}).invoke(
        main, list(args), catch_exceptions=False, prog_name="graphdoctor")
    assert result.exit_code in (0, 3), result.output
    return result.stderr


def go_on_under_themselves(text: str) -> bool:
    """Every line of graphdoctor's that wrapped goes on indented past where it began."""
    lines = text.splitlines()
    return all(line.startswith("  ") for before, line in zip(lines, lines[1:], strict=False)
               if before.startswith("graphdoctor:") and not line.startswith("graphdoctor:"))


DIFFS = [("launch_bound", "gpu_bound"), ("item_in_capture", "launch_bound"),
         ("dist_extra_allreduce_in_capture", "dist_healthy_capture"),
         ("compile_graph_break", "compile_healthy")]


HEADINGS = ("graphdoctor diff:", "Regressions (", "No regressions.", "Verdicts", "Findings",
            "Run", "Environment", "Figures that changed")


@pytest.mark.parametrize("columns", [80, 120])
@pytest.mark.parametrize(("before", "after"), DIFFS)
def test_diff_fits_and_its_wrapped_items_keep_their_indent(before: str, after: str,
                                                         columns: int) -> None:
    from tests.conftest import RECORDINGS

    text = CliRunner(env={"COLUMNS": str(columns)}).invoke(
        main, ["diff", str(RECORDINGS / f"{before}.json"), str(RECORDINGS / f"{after}.json")],
        catch_exceptions=False).stdout
    assert too_wide(text, columns) == []
    assert [line for line in text.splitlines()  # a line at the edge is a heading, not a wrap
            if line.strip("─") and not line.startswith((" ", *HEADINGS))] == []
    assert too_wide(render_diff_colored(before, after, columns), columns) == []


def render_diff_colored(before: str, after: str, columns: int) -> str:
    from graphdoctor.report import diff
    from graphdoctor.report.render.diff import render_diff_text

    result = diff.compare(report_for(before), report_for(after), before, after, 0.1)
    return render_diff_text(result, width=columns, color=True)


@pytest.mark.parametrize("columns", [60, 80])
def test_notices_on_stderr_fit_and_go_on_under_themselves(columns: int) -> None:
    from tests.conftest import RECORDINGS

    ranks = [str(RECORDINGS / f"dist4_subgroup_diverge.rank{n}.spool.jsonl.gz")
             for n in range(4)]
    for args in (["report", str(RECORDINGS / "launch_bound.json")], ["report", *ranks],
                 ["diff", str(RECORDINGS / "launch_bound.json"),
                  str(RECORDINGS / "gpu_bound.json")]):
        said = stderr_of(*args, columns=columns)
        assert said.startswith("graphdoctor: read")
        assert len(said.splitlines()) > 1  # each file's path is longer than the line
        assert too_wide(said, columns) == [] or all(  # but for a path longer than a line
            " " not in line.strip() for line in too_wide(said, columns))
        assert go_on_under_themselves(said), said


def test_a_notice_wraps_under_itself_and_keeps_a_long_path_whole() -> None:
    from graphdoctor.columns import notice

    path = "/a/" + "b" * 90 + ".json"
    said = notice(f"graphdoctor: read {path} (the recording x.json stands for)\n"
                  "  explore it: the report of a job of 4 ranks, every rank on one axis", 40)
    assert said.splitlines() == [
        "graphdoctor: read", f"  {path}", "  (the recording x.json stands for)",
        "  explore it: the report of a job of 4", "    ranks, every rank on one axis"]
