"""graphdoctor inside a test: ``check(fn, *args)`` and ``with recording():``.

Both record in this process, with the recorder and the rules of ``graphdoctor run``, write
the same JSON report, and give a :class:`Result` whose ``assert_ok(fail_on=...)`` takes the
conditions of ``graphdoctor run --fail-on``. In-process recording cannot survive what
``graphdoctor run``'s child process survives: a crash or a hang of the recorded code takes
the process down, report and all (see :mod:`graphdoctor.record.in_process`).

Importing this module imports no torch; recording does.
"""

from __future__ import annotations

import os
import shlex
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from graphdoctor.diagnose.findings import SEVERITY_RANK, WARNING, Finding, Verdict
from graphdoctor.errors import GraphDoctorError, NoCudaWarning
from graphdoctor.files.run_files import RunFiles, recording_report
from graphdoctor.report.gates import TEST_CONDITIONS, Trip, parse_conditions
from graphdoctor.report.gates import check as tripped

if TYPE_CHECKING:
    from graphdoctor.record.in_process import InProcessRecording
    from graphdoctor.record.recorder import Recorder
    from graphdoctor.report.document import Report

# A ``fail_on``: "capture-failed,skipped", the same names in a list, or None for
# TEST_CONDITIONS (graphdoctor.report.gates).
Conditions = str | Iterable[str] | None
MOST_FINDINGS_SHOWN = 5


class GraphDoctorFailure(AssertionError):
    """A ``fail_on`` condition holds: the message names it, the findings behind it with the
    user's lines, and the report."""

    def __init__(self, message: str, result: Result, trips: list[Trip]):
        super().__init__(message)
        self.result = result
        self.trips = trips


@dataclass(frozen=True)
class Result:
    """What one recording found: a verdict for each graph and compiled function, the
    findings, and where its report is."""

    verdicts: tuple[Verdict, ...]
    findings: tuple[Finding, ...]
    # the lowest measured speedup of its graphs (each verdict has its own); None when no
    # graph was measured against eager runs of the same code
    speedup: float | None
    report_path: Path
    site: str  # the caller's file:line that made the recording
    report: Report = field(repr=False, compare=False)

    @classmethod
    def of(cls, report: Report, report_path: Path, site: str) -> Result:
        verdicts, findings = report.diagnosis.verdicts, report.diagnosis.findings
        speedups = [v.speedup for v in verdicts if v.speedup is not None]
        return cls(verdicts, findings, min(speedups, default=None), report_path, site, report)

    def failures(self, fail_on: Conditions = None) -> list[Trip]:
        """The conditions of ``fail_on`` that hold, each with why."""
        return tripped(self.report, conditions(fail_on))

    def __str__(self) -> str:
        """What ``graphdoctor run`` prints at the end: each graph's verdict (or why there is
        none) and where the report is."""
        from graphdoctor.report.render.summary import outcome_lines

        return "\n".join([*outcome_lines(self.report),
                          f"graphdoctor: report written to {self.report_path}"])

    @property
    def without_cuda(self) -> bool:
        """Recorded where no CUDA device was: torch.compile's events only, no graphs."""
        meta = self.report.trace.meta
        return bool(meta.torch) and not meta.cuda_available

    def assert_ok(self, fail_on: Conditions = None) -> None:
        """Raise GraphDoctorFailure if a condition of ``fail_on`` holds."""
        __tracebackhide__ = True  # pytest shows the caller's line, not this one
        trips = self.failures(fail_on)
        if trips:
            raise GraphDoctorFailure(failure_text(self, trips), self, trips)


def conditions(fail_on: Conditions) -> tuple[str, ...]:
    """The names in ``fail_on``, checked; GraphDoctorError for one that is not a condition."""
    if fail_on is None:
        return TEST_CONDITIONS
    return parse_conditions(fail_on if isinstance(fail_on, str) else ",".join(fail_on))


def failure_text(result: Result, trips: list[Trip]) -> str:
    """What tripped and why, the findings with the user's lines, and the report."""
    names = ",".join(trip.condition for trip in trips)
    lines = [f"graphdoctor: --fail-on {names} tripped for the recording at {result.site}"]
    lines += [f"  {trip}" for trip in trips]
    for finding in _worst_findings(result.findings):
        lines.append(f"  {finding.id} {finding.title}")
        if finding.location is not None:
            where = f"{finding.location.file}:{finding.location.line}"
            lines.append(f"    {where}: {finding.location.code}" if finding.location.code
                         else f"    {where}")
    lines.append(f"  report: {result.report_path}")
    lines.append(f"  explore it: graphdoctor view {shlex.quote(str(result.report_path))}")
    return "\n".join(lines)


def _worst_findings(findings: Iterable[Finding]) -> list[Finding]:
    """The findings of severity error or warning, worst first, as many as a message holds."""
    shown = [f for f in findings if SEVERITY_RANK.get(f.severity, 9) <= SEVERITY_RANK[WARNING]]
    return sorted(shown, key=lambda f: f.sort_key)[:MOST_FINDINGS_SHOWN]


def check(fn: Callable[..., Any], /, *args: Any, warmup: int = 3, replays: int = 20,
          report_dir: str | os.PathLike[str] | None = None, **kwargs: Any) -> Result:
    """Record ``fn(*args, **kwargs)`` as a CUDA graph would run it, and return what was found.

    A compiled ``fn`` (what torch.compile returned) is called ``warmup + replays`` times.
    Any other is warmed up ``warmup`` times on a side stream, captured with
    ``torch.cuda.graph``, replayed ``replays`` times and called eagerly as often, which
    measures the speedup (Python 3.12+). A capture that fails is in the result, not raised;
    NoCudaDevice, before ``fn`` is called, where no CUDA device is there to run graphs on."""
    from graphdoctor.record import exercise

    exercise.require_device()
    with Recording(report_dir, f"graphdoctor.check({_name_of(fn)})", _caller_site()) as rec:
        exercise.run(rec.recorder, fn, args, kwargs, warmup, replays)
    return rec.result


def recording(report_dir: str | os.PathLike[str] | None = None, *,
              name: str | None = None) -> Recording:
    """``with recording() as rec:`` records the block; ``rec.result`` once it has ended.
    Where no CUDA device is there, the block runs and is recorded (torch.compile's graph
    breaks and recompiles), and a NoCudaWarning says that no graph can be in it."""
    site = _caller_site()
    return Recording(report_dir, name or f"graphdoctor.recording at {site}", site)


class Recording:
    """A block recorded in this process (``with Recording(...)``); its result once the block
    has ended. ``label`` names the recording in its report, ``site`` the caller's place."""

    def __init__(self, report_dir: str | os.PathLike[str] | None, label: str, site: str):
        self.label = label
        self.site = site
        self._report_dir = report_dir
        self._in_process: InProcessRecording | None = None
        self._result: Result | None = None

    def __enter__(self) -> Recording:
        from graphdoctor.record.in_process import begin

        report_path = reserve_report_path(self._report_dir, self.label)
        spool = RunFiles.of_recording(report_path).spool
        try:
            self._in_process = begin(spool, self.label)
        except BaseException:
            report_path.unlink(missing_ok=True)
            spool.unlink(missing_ok=True)
            raise
        self._report_path = report_path
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if self._in_process is not None:
            self._in_process.finish(error)
            self._result = _finished(self._in_process.spool, self._report_path, self.site)
            self._tell(self._result)

    def _tell(self, result: Result) -> None:
        """Say what cannot be seen in the result alone: that it was recorded without CUDA,
        and where its report went when nobody chose the folder."""
        if result.without_cuda:
            warnings.warn(f"graphdoctor: no CUDA device; the recording at {self.site} holds "
                          "torch.compile's events only", NoCudaWarning, stacklevel=3)
        if self._report_dir is None and not _report_dirs:
            print(result, file=sys.stderr)

    @property
    def recorder(self) -> Recorder:
        """The recorder the block runs under: its own, or the one it joined."""
        if self._in_process is None:
            raise RuntimeError("the recording has not started")
        return self._in_process.recorder

    @property
    def result(self) -> Result:
        if self._result is None:
            raise RuntimeError("the recording's result is known once its block has ended")
        return self._result

    def assert_ok(self, fail_on: Conditions = None) -> None:
        __tracebackhide__ = True
        self.result.assert_ok(fail_on)


def _finished(spool: Path, report_path: Path, site: str) -> Result:
    """The result of a finished recording; its spool is removed once the report is written,
    and kept, for a bug report, if that fails."""
    try:
        result = result_of_spool(spool, report_path, site)
    except Exception as error:
        report_path.unlink(missing_ok=True)
        raise GraphDoctorError(f"graphdoctor: internal error while building the report: "
                               f"{error!r}; the raw recording is kept at {spool}") from error
    spool.unlink(missing_ok=True)
    return result


def result_of_spool(spool: str | os.PathLike[str], report_path: Path, site: str = "") -> Result:
    """Build, diagnose and write the report of a recorded spool, as ``graphdoctor run``
    does; see ``result_of_report``."""
    from graphdoctor.report.recorded import report_from_spools

    return result_of_report(report_from_spools([spool]), report_path, site)


def result_of_report(report: Report, report_path: Path, site: str = "") -> Result:
    """Write the report and give its result to whoever observes results (the pytest
    plugin, which notes each report of a test)."""
    from graphdoctor.report.io import save

    save(report, report_path)
    result = Result.of(report, report_path, site)
    for observer in tuple(_observers):  # one may stop observing as it is called
        observer(result)
    return result


_observers: list[Callable[[Result], None]] = []


def observe_results(observer: Callable[[Result], None]) -> Callable[[], None]:
    """Call ``observer`` with every result from now on; return what stops it."""
    _observers.append(observer)
    return lambda: _observers.remove(observer)


# -- where reports go ------------------------------------------------------------------------
_report_dirs: list[Path] = []  # set by the pytest plugin for its run, innermost last


def set_report_dir(folder: Path | None) -> Callable[[], None]:
    """Write reports of recordings that name no folder into ``folder`` (None: a temporary
    one) until the returned function is called."""
    _report_dirs.append(folder.absolute() if folder is not None else _temporary_dir())
    entry = _report_dirs[-1]
    return lambda: _report_dirs.remove(entry)


def reserve_report_path(report_dir: str | os.PathLike[str] | None, label: str) -> Path:
    """A new report file for ``label`` in the folder, created empty so that no other
    recording, in this process or another, takes its name (GraphDoctorError where none
    can be)."""
    folder = Path(report_dir).absolute() if report_dir is not None else \
        (_report_dirs[-1] if _report_dirs else _temporary_dir())
    folder.mkdir(parents=True, exist_ok=True)
    return recording_report(folder, label)


_temporary: list[Path] = []


def _temporary_dir() -> Path:
    """One folder for the process, made when first needed."""
    if not _temporary:
        _temporary.append(Path(tempfile.mkdtemp(prefix="graphdoctor-")))
    return _temporary[0]


def _caller_site() -> str:
    """file:line of the code that called the function that calls this one; the file
    relative to the current folder when it is inside it."""
    frame = sys._getframe(2)
    path = os.path.abspath(frame.f_code.co_filename)
    inside = path.startswith(os.getcwd() + os.sep)
    return f"{os.path.relpath(path) if inside else path}:{frame.f_lineno}"


def _name_of(fn: Callable[..., Any]) -> str:
    return str(getattr(fn, "__qualname__", None) or type(fn).__qualname__)
