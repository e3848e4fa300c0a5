"""Every output format is one registry entry: each command's --format choices are its
registry's names, no command names a format itself, and every registered format goes through
every command that offers it, to stdout and to a file (``.gz`` compressed) alike."""

from __future__ import annotations

import ast
import gzip
import io
import json
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from graphdoctor.cli import main
from graphdoctor.cli.output import deliver
from graphdoctor.errors import GraphDoctorError
from graphdoctor.files.compression import gzip_bytes
from graphdoctor.files.json_text import COMPACT, PRETTY, PRETTY_NARROW, JsonStyle, json_text
from graphdoctor.report.compare import compared
from graphdoctor.report.render.formats import (
    COMPARE_FORMATS,
    DIFF_FORMATS,
    EXPORT_FORMATS,
    REPORT_FORMATS,
    Format,
    Formats,
    Options,
    Rendered,
)
from tests.compare.test_compare_report import VARIANTS, two_repeats
from tests.conftest import ROOT

DEMO = ROOT / "graphdoctor" / "demo" / "launch_bound.json.gz"
OFFERED: dict[str, Formats[Any]] = {"report": REPORT_FORMATS, "export": EXPORT_FORMATS,
                                    "diff": DIFF_FORMATS, "compare": COMPARE_FORMATS}
# What each command reads, and what it needs besides (a graph to draw, for dot).
GIVEN = {"report": [str(DEMO)], "export": [str(DEMO), "--graph", "0"],
         "diff": [str(DEMO), str(DEMO)]}
CLI = ROOT / "graphdoctor" / "cli"
ALL_NAMES = {one.name for formats in OFFERED.values() for one in formats}


def command(name: str) -> click.Command:
    found = main.get_command(click.Context(main), name)
    assert found is not None
    return found


@pytest.mark.parametrize("name", sorted(OFFERED))
def test_every_format_choice_is_its_registry(name: str) -> None:
    chosen = next(p for p in command(name).params if p.name == "output_format")
    assert isinstance(chosen.type, click.Choice)
    assert list(chosen.type.choices) == OFFERED[name].names()
    assert chosen.default == OFFERED[name].default.name


@pytest.mark.parametrize("path", sorted(CLI.glob("*.py")), ids=lambda p: p.name)
def test_no_command_names_a_format_itself(path: Path) -> None:
    """A format's name is written in the registry only: no list of them, no if-chain."""
    named = [node.value for node in ast.walk(ast.parse(path.read_text()))
             if isinstance(node, ast.Constant) and node.value in ALL_NAMES]
    assert not named


CASES = [(name, one) for name in GIVEN for one in OFFERED[name]]


@pytest.mark.parametrize(("name", "chosen"), CASES, ids=lambda c: getattr(c, "name", c))
def test_every_registered_format_goes_through_its_command(
        name: str, chosen: Format[Any], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    args = [name, "-f", chosen.name, *GIVEN[name]]
    runner = CliRunner()
    printed = runner.invoke(main, [*args, "-o", "-"], catch_exceptions=False)
    assert printed.exit_code == 0, printed.output
    content = printed.stdout_bytes
    assert len(content) > 100
    suffix = chosen.file_suffix(Options(graph=0))
    for file, unpacked in ((tmp_path / f"out{suffix}", bytes),
                           (tmp_path / f"out{suffix}.gz", gzip.decompress)):
        written = runner.invoke(main, [*args, "-o", str(file)], catch_exceptions=False)
        assert written.exit_code == 0 and not written.stdout_bytes
        assert unpacked(file.read_bytes()) == content
    if not chosen.to_terminal:  # without -o: a file named after the report, here
        runner.invoke(main, args, catch_exceptions=False)
        assert (tmp_path / f"launch_bound{suffix}").read_bytes() == content
    elif chosen.read_by_programs:
        json.loads(content)


@pytest.mark.parametrize("chosen", list(COMPARE_FORMATS), ids=lambda c: c.name)
def test_every_compare_format_goes_the_one_way_to_a_file(
        chosen: Format[Any], tmp_path: Path) -> None:
    result = compared("compile_healthy.py", (), 2, VARIANTS,
                      two_repeats("compile_healthy", (300, 320)))
    file = tmp_path / f"compare{chosen.suffix}"
    deliver(result, chosen, file, Options(width=100))
    text = file.read_text()
    assert "compile_healthy" in text
    if chosen.read_by_programs:
        assert json.loads(text)["target"] == "compile_healthy.py"


def test_a_binary_format_is_never_printed_on_a_terminal(
        monkeypatch: pytest.MonkeyPatch) -> None:
    class Terminal(io.BytesIO):
        def isatty(self) -> bool:
            return True

    out = Terminal()
    monkeypatch.setattr("sys.stdout", io.TextIOWrapper(out))
    raw = Format("raw", ".bin", lambda subject, options: Rendered(b"\x00\x01"), binary=True)
    with pytest.raises(GraphDoctorError, match="raw is binary"):
        deliver(object(), raw, None, Options())
    assert out.getvalue() == b""


def test_a_problem_in_the_options_is_a_usage_error_before_anything_is_rendered() -> None:
    with pytest.raises(click.UsageError, match="--graph N"):
        deliver(object(), EXPORT_FORMATS["dot"], None, Options())


@pytest.mark.parametrize("style", [COMPACT, PRETTY, PRETTY_NARROW], ids=lambda s: s.name)
def test_json_is_cleaned_for_a_terminal_in_every_style(style: JsonStyle) -> None:
    value = {"name": "a\x1b]0;x\x07b\u202ec\x7f", "n": [1, 2]}
    text = json_text(value, style)
    assert json.loads(text) == value
    assert not any(c in text for c in "\x1b\x07\u202e\x7f")


def test_the_styles_lay_json_out_as_reports_diff_and_compare_always_had_it() -> None:
    value = {"a": [1, "é"]}
    assert json_text(value, COMPACT) == json.dumps(value, separators=(",", ":"),
                                                   ensure_ascii=False)
    assert json_text(value, PRETTY) == json.dumps(value, indent=2, ensure_ascii=False)
    assert json_text(value, PRETTY_NARROW) == json.dumps(value, indent=1, ensure_ascii=False)


@pytest.mark.parametrize("data", [b"", b"abc", bytes(range(256)) * 4000])
def test_gzip_gives_the_bytes_gzip_compress_gave(data: bytes) -> None:
    assert gzip_bytes(data) == gzip.compress(data, compresslevel=6, mtime=0)
