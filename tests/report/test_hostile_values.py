"""Values JSON can carry that no graphdoctor writes: a lone surrogate (half of a UTF-16
pair) in any string or key, and numbers beyond any graphdoctor's range. Every command says
one line or shows the report; none ends in a traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from graphdoctor.cli import main
from graphdoctor.report import io
from tests.hostile import (
    LONE_SURROGATE,
    OUT_OF_RANGE_NUMBERS,
    SCENARIOS,
    attack,
    scenario_report,
)
from tests.report.test_hostile import COMMANDS
from tests.reports import report_for


def command_lines(hostile: Path, clean: Path) -> dict[str, list[str]]:
    return {name: [str(clean) if a == "CLEAN" else str(hostile) if a == "HOSTILE" else a
                   for a in arguments] for name, (arguments, _) in COMMANDS.items()}


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_lone_surrogate_in_every_string_and_key_is_shown_as_a_replacement(
        tmp_path: Path, scenario: str) -> None:
    data = json.loads(io.dumps(scenario_report(scenario)))
    hostile = tmp_path / "hostile.json"
    hostile.write_text(json.dumps(attack(data, LONE_SURROGATE)))  # escaped, as a file holds it
    assert "\\ud800" in hostile.read_text()
    clean = io.save(scenario_report(scenario), tmp_path / "clean.json")
    for name, arguments in command_lines(hostile, clean).items():
        result = CliRunner().invoke(main, arguments, catch_exceptions=False)
        assert result.exit_code == 0, (name, result.output)
        assert LONE_SURROGATE not in result.output, name
        result.output.encode("utf-8")


def places(value: Any, place: str = "") -> list[tuple[str, Any]]:
    """Every number in a JSON value, with its place (``trace.status.wall_ns``)."""
    if isinstance(value, dict):
        return [p for key, child in value.items() for p in places(child, f"{place}.{key}")]
    if isinstance(value, list):
        return [p for i, child in enumerate(value) for p in places(child, f"{place}[{i}]")]
    is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
    return [(place, value)] if is_number else []


def replaced(data: Any, place: str, text: str) -> str:
    """The JSON text of ``data`` with the number at ``place`` written as ``text``."""
    marker = "__the_number__"
    target = data
    parts = place.replace("[", ".[").strip(".").split(".")
    for part in parts[:-1]:
        target = target[int(part[1:-1])] if part.startswith("[") else target[part]
    last = parts[-1]
    if last.startswith("["):
        target[int(last[1:-1])] = marker
    else:
        target[last] = marker
    return json.dumps(data).replace(f'"{marker}"', text)


@pytest.mark.parametrize("number", OUT_OF_RANGE_NUMBERS)
def test_a_number_out_of_range_is_one_line(tmp_path: Path, number: str) -> None:
    measured = report_for("launch_bound")  # a verdict's measurements: floats
    data = json.loads(io.dumps(measured))
    found = places(data)
    floats = [place for place, value in found if isinstance(value, float)]
    picked = {place for place, _ in found if ".status." in place} | set(floats[:2])
    picked |= {found[len(found) // 2][0], found[-1][0]}  # one in a table, the last one
    assert floats and len(picked) >= 5
    clean = io.save(measured, tmp_path / "clean.json")
    for place in sorted(picked):
        hostile = tmp_path / "hostile.json"
        hostile.write_text(replaced(json.loads(json.dumps(data)), place, number))
        for name, arguments in command_lines(hostile, clean).items():
            result = CliRunner().invoke(main, arguments, catch_exceptions=False)
            assert result.exit_code == 2, (place, name, result.output[-300:])
            assert result.stderr.startswith("graphdoctor: error: ") \
                and result.stderr.count("\n") == 1, (place, name, result.stderr)
            assert "a number out of range" in result.stderr
