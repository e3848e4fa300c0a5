"""Everything fits the terminal: every command's help, `rules`, `explain` and the text
report, at 80 and 120 columns (COLUMNS, as a terminal or a pipe sets it), with no line
ending in spaces."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from graphdoctor.cli import main
from graphdoctor.diagnose.rules import ALL_RULES
from graphdoctor.report.render.text import render_text
from tests.reports import report_for, scenario_names, scenario_params

COMMANDS = ["", *sorted(main.commands)]  # type: ignore[attr-defined]
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
