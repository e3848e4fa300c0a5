"""Hostile reports (tests/hostile.py) through every command that prints a report: nothing
the report holds reaches the terminal as a control sequence, and markup is shown as typed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from graphdoctor.cli import main
from graphdoctor.report import io
from graphdoctor.report.diff import compare
from graphdoctor.report.render.diff import render_diff_text
from graphdoctor.report.render.text import render_text
from tests.hostile import (
    MARKUP_SHOWN,
    PAYLOADS,
    SCENARIOS,
    attacked_places,
    free_text_places,
    hostile_report,
    leaks,
    scenario_report,
    visible,
)

# Each command line, and whether it shows the report's text as plain text (markup payloads
# must then appear as typed; markdown escapes brackets and JSON quotes them).
COMMANDS = {
    "report": (["report", "HOSTILE"], True),
    "report markdown": (["report", "-f", "markdown", "HOSTILE"], False),
    "report json": (["report", "-f", "json", "HOSTILE"], False),
    "report json redacted": (["report", "-f", "json", "--redact", "HOSTILE"], False),
    "export": (["export", "-o", "-", "HOSTILE"], False),
    "diff": (["diff", "CLEAN", "HOSTILE"], True),
    "diff markdown": (["diff", "-f", "markdown", "CLEAN", "HOSTILE"], False),
    "diff json": (["diff", "-f", "json", "HOSTILE", "CLEAN"], False),
    "view without a terminal": (["view", "HOSTILE"], True),
}


def test_the_corpus_attacks_every_free_text_place_of_the_schema() -> None:
    attacked = set().union(*(attacked_places(json.loads(io.dumps(scenario_report(name))))
                             for name in SCENARIOS))
    assert attacked == free_text_places()


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Path]:
    folder = tmp_path_factory.mktemp("hostile")
    paths = {}
    for scenario in SCENARIOS:
        paths[scenario, "clean"] = io.save(scenario_report(scenario), folder / f"{scenario}.json")
        for kind, payload in PAYLOADS.items():
            name = f"{scenario}-{kind.replace(' ', '-')}.json"
            paths[scenario, kind] = io.save(hostile_report(scenario, payload), folder / name)
    return paths


@pytest.mark.parametrize("kind", PAYLOADS)
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_no_command_passes_the_report_s_controls_to_the_terminal(
        files: dict[tuple[str, str], Path], scenario: str, kind: str) -> None:
    for command, (arguments, plain_text) in COMMANDS.items():
        args = [str(files[scenario, "clean"]) if a == "CLEAN" else
                str(files[scenario, kind]) if a == "HOSTILE" else a for a in arguments]
        result = CliRunner().invoke(main, args, catch_exceptions=False)
        assert result.exit_code == 0, (command, result.output)
        assert not leaks(result.output), (command, leaks(result.output)[:5])
        if kind == "markup" and plain_text:
            assert MARKUP_SHOWN in result.stdout, command


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_colour_is_the_only_escape_in_a_coloured_summary(scenario: str) -> None:
    report = hostile_report(scenario)
    for output in (render_text(report, width=200, color=True),
                   render_diff_text(compare(scenario_report(scenario), report, "a", "b"),
                                    width=200, color=True)):
        assert "\x1b[" in output and not leaks(output)
        assert MARKUP_SHOWN in visible(output)


@pytest.mark.parametrize("command", [["report"], ["export"], ["view"], ["diff", "MISSING"]])
def test_an_error_quoting_a_hostile_name_is_one_plain_line(tmp_path: Path,
                                                          command: list[str]) -> None:
    hostile = "".join(PAYLOADS.values()).replace("\x00", "")  # no argument can hold NUL
    missing = str(tmp_path / f"report{hostile}\nsecond line.json")
    args = [missing if a == "MISSING" else a for a in command] + [missing]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 2
    assert result.stderr.startswith("graphdoctor: error: ") and result.stderr.count("\n") == 1
    assert not leaks(result.stderr), leaks(result.stderr)
