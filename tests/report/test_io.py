"""Reading report files: every way a file can be bad gets one clear ReportError, and reading
never runs anything from the file."""

from __future__ import annotations

import ast
import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import graphdoctor
from graphdoctor.cli import main
from graphdoctor.errors import ReportError
from graphdoctor.report import io
from graphdoctor.report.document import SCHEMA_VERSION, to_json
from tests.report.helpers import hand_made, json_text, plain, real

PACKAGE = Path(graphdoctor.__file__).parent


@pytest.fixture(scope="module")
def report_bytes() -> bytes:
    return io.dumps(real("launch_bound"))


@pytest.mark.parametrize("name", ["run.json", "run.json.gz", "gzipped-but-named.json"])
def test_save_and_load_keep_everything(tmp_path: Path, name: str) -> None:
    report = hand_made()
    path = io.save(report, tmp_path / name)
    if name == "gzipped-but-named.json":
        path.write_bytes(gzip.compress(path.read_bytes()))
    assert path.read_bytes()[:2] == (b"\x1f\x8b" if "gz" in name else b'{"')
    assert json.loads(json_text(io.load(path))) == json.loads(json_text(report))


def test_saving_leaves_no_temporary_file(tmp_path: Path) -> None:
    io.save(real("empty_graph"), tmp_path / "r.json")
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def _write(tmp_path: Path, content: bytes, name: str = "bad.json") -> Path:
    path = tmp_path / name
    path.write_bytes(content)
    return path


BAD_FILES = {
    "empty": (b"", "the file is empty"),
    "blank": (b"  \n\t ", "the file is empty"),
    "not json": (b"\x00\x01binary\xff", "not valid JSON"),
    "a json list": (b"[1, 2, 3]", "not a graphdoctor report"),
    "foreign json": (b'{"traceEvents": []}', "not a graphdoctor report"),
    "no version": (b'{"format": "graphdoctor-report"}', "no valid schema_version"),
    "odd version": (b'{"format": "graphdoctor-report", "schema_version": "\xc2\xb2.0"}',
                    "no valid schema_version"),
    "newer major": (json.dumps({"format": "graphdoctor-report", "schema_version": "2.0"}).encode(),
                    "schema 2.0 is newer than this graphdoctor reads"),
    "nan": (b'{"format": "graphdoctor-report", "schema_version": "1.0", "x": NaN}',
            "not valid JSON"),
    "deep nesting": (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    "bad gzip": (gzip.compress(b"{}")[:10] + b"\xff" * 20, "gzip data is damaged"),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_bad_files_get_one_clear_error(tmp_path: Path, case: str) -> None:
    content, message = BAD_FILES[case]
    with pytest.raises(ReportError, match=message):
        io.load(_write(tmp_path, content))


def test_missing_file_and_folder(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match="no such file"):
        io.load(tmp_path / "absent.json")
    with pytest.raises(ReportError, match="is a folder"):
        io.load(tmp_path)


@pytest.mark.parametrize("fraction", [0.001, 0.1, 0.5, 0.9, 0.999])
def test_truncated_files_are_refused(tmp_path: Path, report_bytes: bytes, fraction: float) -> None:
    with pytest.raises(ReportError, match="not valid JSON, perhaps truncated"):
        io.load(_write(tmp_path, report_bytes[:int(len(report_bytes) * fraction)]))
    packed = gzip.compress(report_bytes)
    with pytest.raises(ReportError, match="gzip data is (truncated|damaged)"):
        io.load(_write(tmp_path, packed[:max(3, int(len(packed) * fraction))], "bad.json.gz"))


def test_a_decompression_bomb_stops_at_the_limit(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(io, "MAX_REPORT_BYTES", 1_000_000)
    bomb = gzip.compress(b" " * 5_000_000)
    assert len(bomb) < 10_000
    with pytest.raises(ReportError, match="too big to be a report"):
        io.load(_write(tmp_path, bomb, "bomb.json.gz"))


def test_a_huge_file_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                 report_bytes: bytes) -> None:
    monkeypatch.setattr(io, "MAX_REPORT_BYTES", len(report_bytes) - 1)
    with pytest.raises(ReportError, match="too big to be a report"):
        io.load(_write(tmp_path, report_bytes))


def test_a_newer_minor_version_with_new_fields_still_loads() -> None:
    data = plain(real("launch_bound"))
    major = SCHEMA_VERSION.split(".")[0]
    data["schema_version"] = f"{major}.99"
    data["a_field_from_the_future"] = {"anything": [1, 2]}
    data["trace"]["graphs"][0]["new_graph_field"] = "x"
    replays = data["trace"]["tables"]["replays"]
    replays["new_column"] = [0] * len(replays["t"])
    report = io.parse(data)
    assert report.schema_version == f"{major}.99"
    assert report.trace.graphs == real("launch_bound").trace.graphs


def test_a_newer_trace_encoding_asks_for_an_upgrade() -> None:
    data = plain(real("launch_bound"))
    data["trace"]["version"] = 99
    with pytest.raises(ReportError, match="upgrade graphdoctor"):
        io.parse(data)


def test_a_damaged_field_names_its_place() -> None:
    data = plain(real("launch_bound"))
    data["trace"]["status"]["exit_code"] = "zero"
    with pytest.raises(ReportError, match=r"report\.trace\.status\.exit_code: expected integer"):
        io.parse(data)


BAD_FOR_CLI = ["missing.json", "empty.json", "truncated.json", "foreign.json", "newer.json"]


@pytest.fixture
def bad_inputs(tmp_path: Path, report_bytes: bytes) -> Path:
    _write(tmp_path, b"", "empty.json")
    _write(tmp_path, report_bytes[:5000], "truncated.json")
    _write(tmp_path, b'{"hello": "world"}', "foreign.json")
    newer = json.loads(report_bytes)
    newer["schema_version"] = "7.0"
    _write(tmp_path, json.dumps(newer).encode(), "newer.json")
    return tmp_path


@pytest.mark.parametrize("name", BAD_FOR_CLI)
@pytest.mark.parametrize("command", [["report"], ["report", "-f", "markdown"], ["export"],
                                     ["diff", "GOOD"]])
def test_cli_says_one_line_and_exits_2(bad_inputs: Path, tmp_path: Path, name: str,
                                       command: list[str]) -> None:
    good = tmp_path / "good.json"
    io.save(real("empty_graph"), good)
    args = [str(good) if a == "GOOD" else a for a in command] + [str(bad_inputs / name)]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("graphdoctor: error: ")
    assert name in lines[0] and "Traceback" not in result.output


def test_the_real_entry_point_prints_no_traceback(bad_inputs: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "graphdoctor", "report",
                           str(bad_inputs / "truncated.json")], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2
    assert done.stderr.startswith("graphdoctor: error: ") and "Traceback" not in done.stderr
    assert done.stdout == ""


FORBIDDEN_MODULES = {"pickle", "marshal", "shelve", "dill", "cloudpickle", "yaml", "joblib"}
FORBIDDEN_CALLS = {"eval", "exec", "compile", "__import__"}


@pytest.mark.parametrize("path", sorted([*PACKAGE.joinpath("report").glob("*.py"),
                                         PACKAGE / "trace" / "codec.py"]), ids=lambda p: p.name)
def test_the_reading_code_cannot_execute_data(path: Path) -> None:
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
            assert not FORBIDDEN_MODULES & {n.split(".")[0] for n in names}, path
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            assert node.func.id not in FORBIDDEN_CALLS, f"{path}:{node.lineno}"


def test_code_in_a_report_is_shown_never_run(tmp_path: Path) -> None:
    canary = tmp_path / "ran"
    payload = f"__import__('pathlib').Path({str(canary)!r}).touch()"
    data = to_json(hand_made())
    data["trace"]["meta"]["target"] = payload
    data["trace"]["strings"][0] = payload
    data["diagnosis"]["findings"][0]["title"] = payload
    path = _write(tmp_path, json.dumps(data).encode())
    for command in (["report"], ["report", "-f", "markdown"], ["report", "-f", "json"],
                    ["export", "-o", str(tmp_path / "t.json")]):
        result = CliRunner().invoke(main, [*command, str(path)], catch_exceptions=False)
        assert result.exit_code == 0
    assert "__import__" in CliRunner().invoke(main, ["report", str(path)]).output
    assert not canary.exists()


def test_report_package_imports_and_works_without_torch(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    io.save(hand_made(), path)
    code = ("import sys; sys.modules['torch'] = None\n"
            "import graphdoctor.report.io as io, graphdoctor.report.render.text as t, "
            "graphdoctor.report.render.markdown as m, graphdoctor.report.render.chrome_trace as c, "
            "graphdoctor.report.diff as d, graphdoctor.report.redact as r, "
            "graphdoctor.report.gates as g, graphdoctor.cli\n"
            f"report = io.load({str(path)!r})\n"
            "print(len(t.render_text(report)) > 0, len(m.render_markdown(report)) > 0, "
            "len(c.to_chrome_trace(report)['traceEvents']) > 0, "
            "d.compare(report, r.redact(report)).regressions == (), "
            "[x.condition for x in g.check(report, ['capture-failed'])])\n"
            "assert 'torch' not in [m.split('.')[0] for m in sys.modules if sys.modules[m]]\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True True True True ['capture-failed']"
