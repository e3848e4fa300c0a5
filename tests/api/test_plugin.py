"""The pytest plugin on a CPU, through pytester: its options and marker, the skip (or the
failure) without CUDA, the failure message and junitxml property of a tripped condition,
and the recorder removed after every test it records.

Tests whose outcome needs a GPU recording get one through the plugin's seam: a conftest
puts a recording that yields one of fixtures/recordings' results in place of the real one,
and says CUDA is there. The plugin is loaded with -p, not through its entry point, which
the shared environment may not have installed; autoloading is off so that both never meet.
"""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")

from graphdoctor.pytest_plugin import NO_CUDA, REPORT_PROPERTY  # noqa: E402
from tests.conftest import ROOT  # noqa: E402

pytest_plugins = ["pytester"]
PLUGIN = ("-p", "graphdoctor.pytest_plugin")

# The seam: results from the committed GPU recordings, CUDA said to be there. A test names
# its recording in its own name, after "test_": test_item_in_capture, test_launch_bound...
FAKE_RECORDING = f"""
import sys
import pytest
sys.path.insert(0, {str(ROOT)!r})
from graphdoctor import api
from graphdoctor.pytest_plugin import PLUGIN_NAME
from tests.reports import report_for

class FromFixture:
    def __init__(self, report_dir, name, site):
        self.name, self.site = name, site
        self.path = api.reserve_report_path(report_dir, name)

    def __enter__(self):
        return self

    def __exit__(self, *error):
        scenario = self.name.rsplit("::test_", 1)[-1]
        self.result = api.result_of_report(report_for(scenario), self.path, self.site)

@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    plugin = config.pluginmanager.get_plugin(PLUGIN_NAME)
    if plugin is not None:
        plugin.recording = FromFixture
        plugin.cuda_available = lambda: {{cuda}}
"""


@pytest.fixture(autouse=True)
def no_autoloaded_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")


def fake_recordings(pytester: pytest.Pytester, cuda: bool = True) -> None:
    pytester.makeconftest(FAKE_RECORDING.replace("{cuda}", str(cuda)))


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(*PLUGIN, "-p", "no:cacheprovider", "-W",
                              "ignore::pytest.PytestAssertRewriteWarning", *args)


# -- options and marker --------------------------------------------------------------------
def test_the_options_and_the_marker_are_registered(pytester: pytest.Pytester) -> None:
    helped = run(pytester, "--help")
    for option in ("--graphdoctor ", "--graphdoctor-all", "--graphdoctor-fail-on=CONDITIONS",
                   "--graphdoctor-dir=DIR", "--graphdoctor-require-gpu"):
        assert option in helped.stdout.str()
    markers = run(pytester, "--markers")
    markers.stdout.fnmatch_lines(["@pytest.mark.graphdoctor(fail_on=CONDITIONS): *"])


def test_without_the_option_a_marked_test_runs_unrecorded(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest
        from graphdoctor.record import session

        @pytest.mark.graphdoctor(fail_on="capture-failed")
        def test_marked(record_property):
            assert session.running() is None
    """)
    result = run(pytester, "--strict-markers")
    result.assert_outcomes(passed=1)
    assert "graphdoctor" not in result.stdout.str()


def test_a_condition_that_is_not_one_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = run(pytester, "--graphdoctor", "--graphdoctor-fail-on=capture-failed,fast")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--graphdoctor-fail-on: unknown --fail-on condition 'fast'*"])


def test_a_marker_naming_no_condition_fails_at_set_up(pytester: pytest.Pytester) -> None:
    fake_recordings(pytester)
    pytester.makepyfile("""
        import pytest

        @pytest.mark.graphdoctor(fail_on="slow")
        def test_launch_bound():
            pass
    """)
    result = run(pytester, "--graphdoctor")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*@pytest.mark.graphdoctor: unknown --fail-on condition 'slow'*"])


# -- without CUDA ------------------------------------------------------------------------------
MARKED_AND_NOT = """
    import pytest

    @pytest.mark.graphdoctor
    def test_marked():
        pass

    def test_unmarked():
        pass
"""


def test_without_cuda_marked_tests_skip_with_the_reason(pytester: pytest.Pytester) -> None:
    fake_recordings(pytester, cuda=False)
    pytester.makepyfile(MARKED_AND_NOT)
    result = run(pytester, "--graphdoctor", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines([f"SKIPPED [[]1[]] test_without_cuda_marked_tests_skip*.py:3: "
                                 f"{NO_CUDA}"])


def test_without_cuda_require_gpu_fails_marked_tests(pytester: pytest.Pytester) -> None:
    fake_recordings(pytester, cuda=False)
    pytester.makepyfile(MARKED_AND_NOT)
    result = run(pytester, "--graphdoctor", "--graphdoctor-require-gpu")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines([f"*{NO_CUDA} (--graphdoctor-require-gpu)*"])


# -- a tripped condition ----------------------------------------------------------------------
def test_a_tripped_condition_fails_the_test_with_the_finding_and_the_report(
        pytester: pytest.Pytester) -> None:
    fake_recordings(pytester)
    pytester.makepyfile("""
        import pytest

        @pytest.mark.graphdoctor(fail_on="capture-failed,skipped")
        def test_item_in_capture():
            pass
    """)
    result = run(pytester, "--graphdoctor", "--junitxml=out.xml")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "graphdoctor: --fail-on capture-failed tripped for the recording at "
        "test_a_tripped_condition_fails_the_test_with_the_finding_and_the_report.py:3",
        "  capture-failed: capture of graph 0 (torch.cuda.graph) failed at *",
        "  GD101 `.item()` at item_in_capture.py:15 waits for the GPU inside the capture*",
        "    *item_in_capture.py:15*",
        "  report: */graphdoctor/*test_item_in_capture.json",
    ])
    reports = junit_reports(pytester.path / "out.xml")
    assert list(reports) == ["test_item_in_capture"]
    assert Path(reports["test_item_in_capture"]).is_file()
    assert f"report: {reports['test_item_in_capture']}" in result.stdout.str()


def junit_reports(xml: Path) -> dict[str, str]:
    """Test name -> the report property junitxml wrote for it."""
    found = {}
    for case in ElementTree.parse(xml).getroot().iter("testcase"):
        for prop in case.iter("property"):
            if prop.get("name") == REPORT_PROPERTY:
                found[case.get("name", "")] = prop.get("value", "")
    return found


CONDITIONS_FILE = """
    import pytest

    @pytest.mark.graphdoctor(fail_on="skipped")
    def test_item_in_capture():  # failed, but only skips are checked
        pass

    @pytest.mark.graphdoctor
    def test_compile_mutated_input():  # the default conditions: skipped is one
        pass

    @pytest.mark.graphdoctor
    def test_launch_bound():  # healthy, 7.54x faster
        pass
"""


def test_the_markers_conditions_or_else_the_options(pytester: pytest.Pytester) -> None:
    fake_recordings(pytester)
    pytester.makepyfile(CONDITIONS_FILE)
    default = run(pytester, "--graphdoctor")
    default.assert_outcomes(passed=2, failed=1)
    default.stdout.fnmatch_lines(["*_ test_compile_mutated_input _*",
                                  "graphdoctor: --fail-on skipped tripped*"])
    chosen = run(pytester, "--graphdoctor", "--graphdoctor-fail-on=capture-failed,slower")
    chosen.assert_outcomes(passed=3)


def test_a_failing_test_keeps_its_own_failure_and_its_report(pytester: pytest.Pytester) -> None:
    fake_recordings(pytester)
    pytester.makepyfile("""
        def test_item_in_capture():
            assert 1 + 1 == 3
    """)
    result = run(pytester, "--graphdoctor-all", "--junitxml=out.xml")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*assert (1 + 1) == 3*", "*Captured graphdoctor call*",
                                 "graph 0 (torch.cuda.graph, item_in_capture.py:13): capture "
                                 "failed*", "report: *-test_item_in_capture.json"])
    assert "tripped" not in result.stdout.str()
    assert list(junit_reports(pytester.path / "out.xml")) == ["test_item_in_capture"]


# -- real recordings: the recorder comes and goes with each test ------------------------------
RECORDED_TESTS = """
    import torch
    import graphdoctor
    from graphdoctor.record import session

    ORIGINAL_COMPILE = torch.compile  # imported before any recording

    def test_patched_while_recorded():
        assert session.running() is not None
        assert torch.compile is not ORIGINAL_COMPILE

    def test_raises():
        raise RuntimeError("the test's own error")

    def test_checks_nothing():
        torch.ones(3).sum()

    def test_a_recording_inside_joins_the_tests():
        with graphdoctor.recording() as inner:
            torch.ones(3).sum()
        assert inner.result.report_path.parent.name == "reports"  # the plugin's folder
"""


def test_each_recorded_test_leaves_torch_as_it_found_it(
        pytester: pytest.Pytester, untouched_torch: dict[Any, Any]) -> None:
    pytester.makepyfile(RECORDED_TESTS)
    folder = pytester.path / "reports"
    result = run(pytester, "--graphdoctor-all", f"--graphdoctor-dir={folder}",
                 "--junitxml=out.xml")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines([f"graphdoctor: 5 report(s) written in {folder}"])
    assert len(list(folder.glob("*.json"))) == 5 and not list(folder.glob("*.spool"))
    reports = junit_reports(pytester.path / "out.xml")
    assert set(reports) == {"test_patched_while_recorded", "test_raises",
                            "test_checks_nothing", "test_a_recording_inside_joins_the_tests"}


def test_loading_the_plugin_imports_nothing_heavy() -> None:
    """The entry point loads it into every pytest run of every project."""
    probe = ("import sys\nimport graphdoctor.pytest_plugin\n"
             "print(' '.join(sorted(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr
    loaded = done.stdout.split()
    assert [m for m in loaded if m.startswith("graphdoctor")] == [
        "graphdoctor", "graphdoctor.errors", "graphdoctor.pytest_plugin", "graphdoctor.version"]
    assert "torch" not in loaded


def test_the_entry_point_names_the_plugin() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["entry-points"]["pytest11"] == {"graphdoctor": "graphdoctor.pytest_plugin"}


def test_the_readme_documents_the_options_and_the_default_conditions() -> None:
    from graphdoctor import pytest_plugin
    from graphdoctor.report.gates import TEST_CONDITIONS

    class Options:
        def __init__(self) -> None:
            self.names: list[str] = []

        def getgroup(self, *args: Any) -> Options:
            return self

        def addoption(self, *names: str, **settings: Any) -> None:
            self.names += names

    options = Options()
    pytest_plugin.pytest_addoption(options)  # type: ignore[arg-type]
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## In your test suite"):readme.index("## Overhead")]
    assert options.names and all(f"`{name}" in section for name in options.names)
    assert f"`{','.join(TEST_CONDITIONS)}`" in section
    assert "graphdoctor run" in section and "crash" in section and "hang" in section


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="this machine has CUDA")
@pytest.mark.parametrize("options", [(), ("--graphdoctor",), ("--graphdoctor-all",)])
def test_the_readmes_example_skips_each_test_without_cuda(pytester: pytest.Pytester,
                                                         options: tuple[str, ...]) -> None:
    """Copied from the README as a reader would, and run on this machine, which has no GPU:
    every test is skipped, with its reason, under plain pytest as under the plugin."""
    readme = (ROOT / "README.md").read_text()
    start = readme.index("```python\n# test_graphs.py")
    example = readme[start:readme.index("```\n", start + 3)].removeprefix("```python\n")
    pytester.makepyfile(test_graphs=example)
    result = run(pytester, *options, "-rs")
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(["*needs a CUDA device*"])
