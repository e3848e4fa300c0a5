"""``graphdoctor run``: record a script, diagnose it, write the report."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from graphdoctor.cli.baseline_run import record_baseline
from graphdoctor.cli.common import handle_errors, say
from graphdoctor.cli.native import is_native, prepare_native
from graphdoctor.cli.reporting import fail_on_option, gate_exit
from graphdoctor.cli.run_output import (
    held_a_file,
    keep_path,
    report_path,
    write_report,
)
from graphdoctor.errors import GraphDoctorError
from graphdoctor.files.compression import chunks_as_named, gzipped
from graphdoctor.files.run_files import RunFiles
from graphdoctor.files.writing import (
    Identity,
    OutputError,
    identity,
    move_file,
    write_file,
    written_in_place,
)
from graphdoctor.report.gates import CONDITIONS, GATE_EXIT, check, describe_conditions
from graphdoctor.report.redact import WHAT_GOES
from graphdoctor.report.secrets import secret_values
from graphdoctor.trace.names import CUPTI_ENV, FULL_MODE

if TYPE_CHECKING:
    from graphdoctor.launch.relay import SignalRelay
    from graphdoctor.launch.supervisor import RunRequest
    from graphdoctor.report.document import Report
    from graphdoctor.report.redact import Redactor
    from graphdoctor.trace.model import Trace

RUN_HELP = f"""Run TARGET under graphdoctor and write a report.

TARGET is a Python script (or, with -m, a module), or a native program (an ELF
executable, recorded through CUPTI: see the README). Options come before TARGET;
everything after it goes to the script unchanged (a `--` before TARGET also works).
The script runs in a child process, so a crash, a hang (see --timeout) or a kill
still leaves a report, marked incomplete.
Ctrl-C, SIGTERM, SIGHUP (a closed terminal) and SIGQUIT sent to graphdoctor are
passed on to the script; Ctrl-Z stops both and fg resumes both; if graphdoctor
is killed outright, the script ends with it.

\b
Exit codes:
  the script's own   0, sys.exit(n), 1 for an uncaught exception
  128+N              the script was killed by signal N (139 for a segfault)
  124                the script ran past --timeout
  2                  graphdoctor usage error (bad option, missing script or
                     module, a report folder that is missing or read-only)
  {GATE_EXIT}                  a --fail-on condition holds (the report is still written)

\b
--fail-on conditions (for CI; without one tripped, the script's code stands):
{describe_conditions()}
"""


@click.command(help=RUN_HELP, context_settings={"ignore_unknown_options": True,
                                                "allow_interspersed_args": False})
@click.option("-m", "module", is_flag=True, help="Run TARGET as a module, like python -m.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Report file (default: graphdoctor-<script>-<time>.json; .gz compresses).")
@click.option("--full", "full", is_flag=True,
              help="Record every allocation with its stack, and profile one replay of each "
                   "graph for its kernels' GPU times (slower; default: allocations only in "
                   "captures, no profiler).")
@click.option("--cupti", is_flag=True,
              help="Also record CUDA graphs made outside PyTorch (CuPy, cuda.core, "
                   "cuda-python, graphs built node by node) through CUPTI; needs the cupti "
                   "extra. Off by default: a Python callback runs on each graph call.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), metavar="SECONDS",
              help="Dump every thread's stack and stop the script after SECONDS.")
@click.option("--nproc-per-node", "nproc", type=click.IntRange(min=1), default=1,
              metavar="N", help="Start N ranks through torch.distributed.run (torchrun); one "
                               "report holds every rank.")
@click.option("--keep-spool", type=click.Path(dir_okay=False, path_type=Path),
              metavar="FILE", help="Also keep the raw recording there (.gz compresses; "
                                   "redacted too with --redact); every command reads it as "
                                   "it reads a report.")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing but errors.")
@click.option("--tui", is_flag=True,
              help="Open the report in the terminal UI when the run ends (on a terminal only).")
@click.option("--live", is_flag=True,
              help="Open the terminal UI at once and show the run as it is recorded, the "
                   "report in its place when it ends; the script's output goes to a file "
                   "beside the report (on a terminal only).")
@fail_on_option(CONDITIONS, "listed above")
@click.option("--redact", is_flag=True,
              help=f"Write a report to share: it leaves out {WHAT_GOES}.")
@click.option("--no-children", "no_children", is_flag=True,
              help="Record the script's own process (and its ranks) only, not the Python "
                   "processes it starts (default: each that imports torch is recorded too).")
@click.option("--baseline", is_flag=True,
              help="Then run the script again with CUDA graphs off (torch.compile without "
                   "them, make_graphed_callables' callables as they are) and measure the "
                   "graphs that never ran eagerly against its calls.")
@click.argument("target")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@handle_errors
def run(module: bool, output: Path | None, full: bool, cupti: bool, timeout: float | None,
        nproc: int, keep_spool: Path | None, quiet: bool, tui: bool, live: bool,
        fail_on: tuple[str, ...], redact: bool, no_children: bool, baseline: bool, target: str,
        args: tuple[str, ...]) -> None:
    check_target(target, module, args)
    if is_native(target, module):
        prepare_native(target, nproc, baseline)
    if cupti:  # the child reads it, as it reads GRAPHDOCTOR_OFF
        os.environ[CUPTI_ENV] = "1"
    if baseline and nproc > 1:
        raise GraphDoctorError("--baseline runs one process; leave out --nproc-per-node")
    path = report_path(output, target, nproc)
    options = RunOptions(target, args, module, path, FULL_MODE if full else "default",
                         timeout, nproc, keep_path(keep_spool), quiet, redact, baseline,
                         identity(path),
                         tuple(secret_values(os.environ)) if redact else (),
                         follow=not no_children, in_place=written_in_place(path))
    exit_code, report, written = _record_and_report(options, live=_live_wanted(live))
    if tui and not live and report is not None and written is not None:
        _open_tui(report, written)
    sys.exit(_gated(exit_code, report, fail_on))


def _live_wanted(live: bool) -> bool:
    from graphdoctor.tui import can_run_interactively

    if live and not can_run_interactively():
        say("graphdoctor: --live needs a terminal; the run is recorded without the view")
        return False
    return live


def _open_tui(report: Report, output: Path) -> None:
    from graphdoctor.tui import can_run_interactively, run_app

    if can_run_interactively():
        crash = run_app(report, str(output))
        if crash is not None:  # the script's exit code still stands; the report is written
            say(f"graphdoctor: the viewer crashed ({crash}); the report is at {output}")
    else:
        say("graphdoctor: --tui needs a terminal; the report is written (graphdoctor view "
            f"{shlex.quote(str(output))})")


@dataclass(frozen=True)
class RunOptions:
    target: str
    args: tuple[str, ...]
    module: bool
    output: Path
    mode: str
    timeout: float | None
    nproc: int
    keep_spool: Path | None
    quiet: bool
    redact: bool
    baseline: bool = False
    seen: Identity | None = None  # what the report's path held when the run began
    secrets: tuple[str, ...] = ()  # the environment's secrets as the run began (--redact)
    follow: bool = True  # record the Python processes the script starts (not --no-children)
    in_place: bool = False  # the report is streamed into a device or a FIFO: nothing beside it


def _gated(exit_code: int, report: Report | None, fail_on: tuple[str, ...]) -> int:
    """The script's own exit code, unless a --fail-on condition holds; a gate that cannot
    be checked (no report) fails, so CI never passes by accident."""
    if not fail_on:
        return exit_code
    if report is None:
        say("graphdoctor: --fail-on could not be checked: no report was built")
        return GATE_EXIT
    return gate_exit(check(report, fail_on), otherwise=exit_code)


def check_target(target: str, module: bool, args: tuple[str, ...] = ()) -> None:
    if module:
        _check_module(target)
        return
    path = Path(target)
    hint = _habit_hint(target, args)
    if hint:  # the interpreter itself, there or not: nothing to run as a script
        raise GraphDoctorError(f"{target} is Python, not a script{hint}")
    if not path.exists():
        raise GraphDoctorError(f"no such script: {target}")
    if path.is_dir() and not (path / "__main__.py").exists():
        raise GraphDoctorError(f"{target} is a folder without a __main__.py")


INTERPRETER = re.compile(r"python[0-9.]*")


def _habit_hint(target: str, args: tuple[str, ...]) -> str:
    """What a habit from another tool (``nsys profile python x.py``) meant, where one
    explains the mistake: graphdoctor starts the Python itself."""
    if not INTERPRETER.fullmatch(Path(target).name):
        return ""
    rest = list(args)
    module = rest[:1] == ["-m"]
    script = shlex.join(rest[1:] if module else rest) or "script.py"
    return (f"; graphdoctor starts Python itself: graphdoctor run {'-m ' if module else ''}"
            f"{script}")


def _check_module(name: str) -> None:
    """Look for the module's top-level package as ``python -m`` run here would, the current
    folder first. Only the top level: finding a submodule imports its package, which would
    run the user's code in graphdoctor's own process; Python itself reports a missing
    submodule once the script's process starts."""
    top = name.partition(".")[0]
    try:
        found = (importlib.machinery.PathFinder.find_spec(top, [os.getcwd()])
                 or importlib.util.find_spec(top))
    except (ImportError, ValueError):  # an empty or relative name
        found = None
    if found is None:
        raise GraphDoctorError(f"no module named {top or name}")


def _record_and_report(options: RunOptions, live: bool = False
                       ) -> tuple[int, Report | None, Path | None]:
    """The exit code, the report and where it was written (None where it was not). Once the
    script is gone, a first Ctrl-C is answered and a second stops the report, keeping the
    raw recording (:mod:`graphdoctor.launch.finishing`). ``live``: with the live view open
    meanwhile (:mod:`graphdoctor.cli.live_run`)."""
    from graphdoctor.launch.finishing import FinishingReport, ReportStopped

    request = _request(options)
    with FinishingReport():
        try:
            if live:
                return _recorded_live(options, request)
            return _record_and_report_as_asked(options, request)
        except ReportStopped as stopped:
            left = [s for s in (*request.files.spools(), request.files.baseline().spool)
                    if s.exists()]
            say(f"graphdoctor: interrupted while writing the report; {_kept(left)}" if left
                else "graphdoctor: interrupted once the report was written")
            return stopped.exit_code, None, None


def _recorded_live(options: RunOptions, request: RunRequest
                   ) -> tuple[int, Report | None, Path | None]:
    from graphdoctor.cli.live_run import record_live

    exit_code, report, written = record_live(options, request, _record_and_report_as_asked)
    if report is not None and written is not None and not options.quiet:
        _print_outcome(report, written)
    return exit_code, report, written


def _record_and_report_as_asked(options: RunOptions, request: RunRequest,
                                relay: SignalRelay | None = None
                                ) -> tuple[int, Report | None, Path | None]:
    from graphdoctor.launch.supervisor import record
    from graphdoctor.report.redact import redactor_for

    end = record(request, relay)
    spools, children = list(end.spools), [files.spool for files in end.children]
    second = record_baseline(request, end, options.quiet) if options.baseline else None
    # kept if no report is made
    recordings = [*spools, *children, *([second.spool] if second else [])]
    report = _built(spools, second.trace if second else None, recordings, end.unwritten,
                    children)
    written = _saved(report, options, recordings) if report is not None else None
    if report is None or written is None:
        for empty in (s for s in recordings if s.exists() and not s.stat().st_size):
            empty.unlink()  # a spool that could not be written: nothing to keep
        return end.exit_code, None, None
    redactor = redactor_for(report, options.secrets) if options.redact else None
    for files in (*request.files.ranks(), *end.children):
        _finish_spool(files, redactor)
    if second is not None:
        _finish_spool(request.files.baseline(), redactor)
    if not options.quiet:
        _print_outcome(report, written)
    return end.exit_code, report, written


def _request(options: RunOptions) -> RunRequest:
    from graphdoctor.launch.progress import wanted
    from graphdoctor.launch.supervisor import RunRequest

    files = RunFiles.of_run(options.output, streamed=options.in_place, nproc=options.nproc,
                            keep=options.keep_spool)
    return RunRequest(options.target, options.args, options.module, files, options.mode,
                      options.timeout, argv=tuple(sys.argv[1:]),
                      progress=wanted(options.quiet), follow=options.follow)


def _built(spools: list[Path], baseline: Trace | None, recordings: list[Path],
           unwritten: dict[Path, bytes], children: list[Path]) -> Report | None:
    from graphdoctor.report.recorded import report_from_spools

    try:
        return report_from_spools(spools, baseline, unwritten=unwritten, children=children)
    except Exception as error:  # noqa: BLE001 - keep the user's exit code and the raw data
        say(f"graphdoctor: internal error while building the report: {error!r}; "
            f"{_kept(recordings)}")
        return None


def _saved(report: Report, options: RunOptions, spools: list[Path]) -> Path | None:
    """Where the report was written: ``-o``, or a name beside it if another run wrote
    ``-o`` while this one ran (said in one line); None if it could not be written."""
    from graphdoctor.report.io import encoded
    from graphdoctor.report.redact import redact

    shared = redact(report, options.secrets) if options.redact else report
    try:
        path = write_report(options.output, encoded(shared, options.output), options.seen)
    except GraphDoctorError as error:
        why = error.why if isinstance(error, OutputError) else error
        say(f"graphdoctor: the report cannot be written to {options.output} ({why}); "
            f"{_kept(spools)}")
        return None
    if path != options.output:
        say(f"graphdoctor: another run wrote {options.output} while this one ran; this "
            f"run's report is {path}")
    elif held_a_file(options.seen, options.in_place):
        say(f"graphdoctor: {path} held a file before this run; this run's report replaced it")
    return path


def _kept(spools: list[Path]) -> str:
    held = [spool for spool in spools if spool.exists() and spool.stat().st_size]
    if not held:
        return "nothing was recorded"
    return f"the raw recording is kept at {', '.join(map(str, held))}"


def _finish_spool(files: RunFiles, redactor: Redactor | None) -> None:
    """Keep the spool where --keep-spool asks, as every file is written (redacted as the
    report is, for --redact; said in one line where it cannot be kept: the report is
    written), then remove it."""
    spool, keep = files.spool, files.keep
    if keep is not None:
        from graphdoctor.report.redact_spool import redacted_lines
        from graphdoctor.trace.spool.file import file_chunks

        try:
            if redactor is None and not gzipped(keep):
                move_file(spool, keep)
            else:
                kept = file_chunks(spool) if redactor is None else redacted_lines(spool, redactor)
                write_file(keep, chunks_as_named(keep, kept))
        except GraphDoctorError as error:
            say(f"graphdoctor: the raw recording could not be kept: {error}")
    spool.unlink(missing_ok=True)


def _print_outcome(report: Report, output: Path) -> None:
    from graphdoctor.report.render.summary import outcome_lines

    for line in outcome_lines(report):
        say(line)
    say(f"graphdoctor: report written to {output}")
    pasteable = shlex.quote(str(output))  # commands a person copies into a shell
    say(f"  explore it:  graphdoctor view {pasteable}", whole=True)
    say(f"  summary:     graphdoctor report {pasteable} --format markdown", whole=True)
