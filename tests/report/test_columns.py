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
