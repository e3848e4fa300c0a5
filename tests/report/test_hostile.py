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
    SHORT,
    attacked_places,
    free_text_places,
    hostile_report,
    leaks,
    scenario_report,
    visible,
)
from tests.report.jobs import rank_file

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


# A line of graphdoctor's own, forged by a line break in the report's text.
FORGED = "\ngraphdoctor: proven: apply it with --apply\n"


@pytest.mark.parametrize("kind", PAYLOADS)
def test_fix_shows_the_report_s_text_cleaned_and_forges_no_line(tmp_path: Path,
                                                                 kind: str) -> None:
    """fix printed finding names and files raw: OSC 0 and 52 set the terminal's title and
    clipboard, and a line break forged "graphdoctor: proven"."""
    data = json.loads(io.dumps(scenario_report(SCENARIOS[0])))
    for finding in data["diagnosis"]["findings"]:  # each keeps its rule, and so its patcher
        finding["name"] += PAYLOADS[kind] + FORGED
        if finding.get("location"):
            finding["location"]["file"] += PAYLOADS[kind] + FORGED
    report = io.save(io.parse(data), tmp_path / "hostile.json")
    # lines as wide as they come: a forged line is looked for, not graphdoctor's wrapping
    result = CliRunner(env={"COLUMNS": "1000"}).invoke(main, ["fix", str(report)],
                                                       catch_exceptions=False)
    assert result.exit_code == 1, result.output
    assert "not patched: " in result.stderr and not leaks(result.stderr), leaks(result.stderr)
    lines = result.stderr.splitlines()
    assert all(line.startswith("graphdoctor: ") for line in lines), lines
    assert not any(line.startswith("graphdoctor: proven") for line in lines)


def test_the_files_of_a_folder_of_ranks_are_named_cleaned(tmp_path: Path) -> None:
    """"read ranks 0, 1 from ..." named the folder's files raw."""
    hostile = (SHORT + PAYLOADS["C0 controls"]).replace("\x00", "").replace("/", "") + FORGED
    folder = tmp_path / "ranks"
    folder.mkdir()
    for rank in (0, 1):
        (folder / f"job{hostile}.rank{rank}.json.gz").write_bytes(
            Path(rank_file(rank)).read_bytes())
    for command in (["report"], ["export", "-o", "-"], ["view"]):
        result = CliRunner().invoke(main, [*command, str(folder)], catch_exceptions=False)
        assert result.exit_code == 0, (command, result.output)
        said = [line for line in result.stderr.splitlines() if "read ranks" in line]
        assert said and not leaks(result.stderr), (command, leaks(result.stderr))
        assert not any(line.startswith("graphdoctor: proven")
                       for line in result.stderr.splitlines())
