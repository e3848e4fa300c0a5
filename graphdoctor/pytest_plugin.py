"""``pytest --graphdoctor``: fail a test whose CUDA graphs fail to capture, are skipped by
torch.compile, re-record, or stop paying off.

Registered through the package's ``pytest11`` entry point, so pytest loads it into every
run wherever graphdoctor is installed. Loaded but not turned on, it adds its options and its
marker and nothing more: it imports neither torch nor the rest of graphdoctor, and no hook
of it runs per test. ``--graphdoctor`` registers :class:`TestRecorder`, which records each
test marked ``graphdoctor`` (every test, with ``--graphdoctor-all``) in the test's own
process, from its set-up to the end of its call, and fails it when a condition holds: the
marker's ``fail_on``, or else ``--graphdoctor-fail-on``'s, named as ``graphdoctor run
--fail-on`` names them.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from graphdoctor.api import Recording, Result

MARKER = "graphdoctor"
PLUGIN_NAME = "graphdoctor-recorder"
NO_CUDA = "graphdoctor: no CUDA device"
REPORT_PROPERTY = "graphdoctor_report"  # a user property of the test: --junitxml writes it


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("graphdoctor", "CUDA graph checks (graphdoctor)")
    group.addoption("--graphdoctor", action="store_true",
                    help="record each test marked graphdoctor, in its own process, and fail "
                         "it when one of its --fail-on conditions holds")
    group.addoption("--graphdoctor-all", action="store_true",
                    help="record every test, marked or not (implies --graphdoctor)")
    group.addoption("--graphdoctor-fail-on", metavar="CONDITIONS",
                    help="comma-separated conditions of graphdoctor run --fail-on, for tests "
                         "whose marker names none (default: those of "
                         "graphdoctor.Result.assert_ok, which do not depend on timing)")
    group.addoption("--graphdoctor-dir", metavar="DIR",
                    help="where reports are written (default: a graphdoctor folder in "
                         "pytest's temporary folder)")
    group.addoption("--graphdoctor-require-gpu", action="store_true",
                    help="fail, rather than skip, marked tests where no CUDA device is there")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}(fail_on=CONDITIONS): with --graphdoctor, record the test and "
                   "fail it when one of CONDITIONS (those of graphdoctor run --fail-on) holds; "
                   "skipped where no CUDA device is there")
    if config.getoption("graphdoctor") or config.getoption("graphdoctor_all"):
        config.pluginmanager.register(TestRecorder(config), PLUGIN_NAME)


@dataclass
class _Held:
    """A test's recording in progress, and the conditions it is checked against."""

    recording: Recording
    fail_on: tuple[str, ...]


_HELD = pytest.StashKey[_Held]()


def _cuda_available() -> bool:
    try:
        from graphdoctor.record.exercise import cuda_available
    except ImportError:  # no torch: no CUDA either
        return False
    return cuda_available()


class TestRecorder:
    """The hooks that record tests; registered by ``--graphdoctor`` only."""

    __test__ = False  # a plugin, not a test class, whatever its name

    def __init__(self, config: pytest.Config):
        from graphdoctor import api
        from graphdoctor.errors import GraphDoctorError

        self._config = config
        self._record_all = bool(config.getoption("graphdoctor_all"))
        self._require_gpu = bool(config.getoption("graphdoctor_require_gpu"))
        try:
            self._fail_on = api.conditions(config.getoption("graphdoctor_fail_on"))
        except GraphDoctorError as error:
            raise pytest.UsageError(f"--graphdoctor-fail-on: {error}") from None
        chosen = config.getoption("graphdoctor_dir")
        self._report_dir: Path | None = Path(chosen).absolute() if chosen else None
        # what records a test, and whether CUDA is there: tests of the plugin replace them
        self.recording: Callable[[Path | None, str, str], Recording] = api.Recording
        self.cuda_available: Callable[[], bool] = _cuda_available
        self._cuda: bool | None = None
        self._reports: list[Path] = []

    # -- which tests, against what ---------------------------------------------------------
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """Where CUDA is missing, marked tests are skipped, as a skip marker would, with the
        test's own place; with --graphdoctor-require-gpu they fail at set-up instead."""
        marked = [item for item in items if item.get_closest_marker(MARKER)]
        if marked and not self._require_gpu and not self._has_cuda():
            for item in marked:
                item.add_marker(pytest.mark.skip(reason=NO_CUDA))

    def _has_cuda(self) -> bool:
        if self._cuda is None:
            self._cuda = self.cuda_available()
        return self._cuda

    def _conditions_of(self, item: pytest.Item) -> tuple[str, ...] | None:
        """What a test is checked against; None for a test not recorded. Where CUDA is
        missing, a marked test fails here with --graphdoctor-require-gpu, and is left to its
        skip marker without."""
        marker = item.get_closest_marker(MARKER)
        if marker is None:
            return self._fail_on if self._record_all else None
        if not self._has_cuda():
            if self._require_gpu:
                pytest.fail(f"{NO_CUDA} (--graphdoctor-require-gpu)", pytrace=False)
            return None
        fail_on = marker.kwargs.get("fail_on", marker.args[0] if marker.args else None)
        return self._fail_on if fail_on is None else self._marker_conditions(fail_on)

    @staticmethod
    def _marker_conditions(fail_on: Any) -> tuple[str, ...]:
        from graphdoctor import api
        from graphdoctor.errors import GraphDoctorError

        try:
            return api.conditions(fail_on)
        except GraphDoctorError as error:
            pytest.fail(f"@pytest.mark.{MARKER}: {error}", pytrace=False)

    # -- recording ---------------------------------------------------------------------------
    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item,
                                nextitem: pytest.Item | None) -> Generator[None, object, object]:
        """Every report written while the test runs (its own, and those of its
        ``graphdoctor.check`` calls) goes into the reports' folder and becomes a user
        property of the test."""
        from graphdoctor import api

        def note(result: Result) -> None:
            item.user_properties.append((REPORT_PROPERTY, str(result.report_path)))
            self._reports.append(result.report_path)

        stop_noting = api.observe_results(note)
        restore_folder = api.set_report_dir(self._folder())
        try:
            return (yield)
        finally:
            restore_folder()
            stop_noting()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, None, None]:
        fail_on = self._conditions_of(item)
        if fail_on is None:
            return (yield)
        path, line, _ = item.location
        # into the folder of the reports set above; the site is the test's own line
        recording = self.recording(None, item.nodeid, f"{path}:{(line or 0) + 1}")
        recording.__enter__()
        item.stash[_HELD] = _Held(recording, fail_on)
        try:
            return (yield)
        except BaseException as error:
            self._finish(item, error)
            raise

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        if _HELD not in item.stash:
            return (yield)
        fail_on = item.stash[_HELD].fail_on
        try:
            outcome = yield
        except BaseException as error:  # the test's own failure stands; the report is kept
            self._finish(item, error)
            raise
        result = self._finish(item, None)
        trips = result.failures(fail_on)
        if trips:
            from graphdoctor.api import failure_text

            pytest.fail(failure_text(result, trips), pytrace=False)
        return outcome

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> None:
        """A recording whose call never ran (--setup-only) ends here, unchecked."""
        if _HELD in item.stash:
            self._finish(item, None)

    def _finish(self, item: pytest.Item, error: BaseException | None) -> Result:
        held = item.stash[_HELD]
        del item.stash[_HELD]
        held.recording.__exit__(type(error) if error else None, error,
                                error.__traceback__ if error else None)
        result = held.recording.result
        item.add_report_section("call", "graphdoctor", _summary(result))
        return result

    def _folder(self) -> Path:
        """--graphdoctor-dir, or a folder in pytest's temporary one (known only once pytest
        has configured it, after this plugin)."""
        if self._report_dir is None:
            factory = getattr(self._config, "_tmp_path_factory", None)  # pytest's tmp_path's
            base = factory.getbasetemp() if factory is not None else \
                Path(tempfile.mkdtemp(prefix="pytest-"))
            self._report_dir = base / "graphdoctor"
        return self._report_dir

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self._reports:
            folders = sorted({str(path.parent) for path in self._reports})
            terminalreporter.write_line(f"graphdoctor: {len(self._reports)} report(s) written "
                                        f"in {', '.join(folders)}")


def _summary(result: Result) -> str:
    """The verdicts and the report, for the test's report section."""
    lines = [f"{verdict.subject}: {verdict.summary}" for verdict in result.verdicts]
    lines.append(f"report: {result.report_path}")
    return "\n".join(lines)
