"""What the report-reading commands (report, export, diff, view, merge) and ``run --fail-on``
share: the reports given (one, or a job's ranks), the --fail-on option, the exit code of a
gate and the width of a summary (where a result goes is :mod:`graphdoctor.cli.output`'s)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import click

from graphdoctor.clean_text import clean_line
from graphdoctor.cli.common import say
from graphdoctor.errors import GraphDoctorError
from graphdoctor.report.document import Report
from graphdoctor.report.gates import GATE_EXIT, Trip, parse_conditions
from graphdoctor.report.redact import redact
from graphdoctor.report.secrets import secret_values

F = TypeVar("F", bound=Callable[..., Any])
DEFAULT_WIDTH = 100
GIVEN_HELP = """\b
REPORT is a report, a raw recording (a spool), or a fixture's note; give
several, one per rank of a job (or a folder of them), for one report of the
whole job."""


def reports_argument() -> Callable[[F], F]:
    """REPORT...: one report, or the files of a job's ranks (:mod:`graphdoctor.report.opening`)."""
    return click.argument("report_files", metavar="REPORT...", nargs=-1, required=True,
                          type=click.Path(path_type=Path))


def open_given(paths: Iterable[Path]) -> Report:
    """The report the files given make, saying on stderr which files a combined one read."""
    from graphdoctor.report.opening import open_report  # diagnoses a job: loaded late

    opened = open_report(list(paths))
    if opened.said():  # the files' names are anyone's text: a folder of ranks is a stranger's
        say(f"graphdoctor: {clean_line(opened.said())}")
    return opened.report


def child_option() -> Callable[[F], F]:
    """``--child PID``: one of the processes the script started, as a report of its own."""
    return click.option("--child", "child", type=click.IntRange(min=0), metavar="PID",
                        help="Show process PID, one the script started (the report names "
                             "them), as a report of its own.")


def chosen(report: Report, child: int | None) -> Report:
    """The report, or the report of the process ``--child`` names."""
    from graphdoctor.report.children import child_report

    return report if child is None else child_report(report, child)


def fail_on_option(known: Iterable[str], described: str, rule_ids: bool = True) -> Callable[[F], F]:
    """``--fail-on A,B``: conditions that make the command exit with GATE_EXIT."""
    names = tuple(known)

    def parse(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[str, ...]:
        try:
            return parse_conditions(value or "", names, rule_ids)
        except GraphDoctorError as error:
            raise click.BadParameter(str(error)) from None

    return click.option("--fail-on", "fail_on", callback=parse, metavar="CONDITIONS",
                        help=f"Exit with code {GATE_EXIT} if any of these comma-separated "
                             f"conditions holds: {described}.")


def gate_exit(trips: list[Trip], otherwise: int = 0) -> int:
    """Say which gates tripped and return GATE_EXIT, or ``otherwise`` if none did."""
    for trip in trips:
        say(f"graphdoctor: --fail-on {trip}")
    return GATE_EXIT if trips else otherwise


def redacted(report: Report) -> Report:
    """``--redact``'s copy of the report, without this environment's secrets either."""
    return redact(report, secret_values(os.environ))


def width(requested: int | None) -> int:
    """``--width``; else COLUMNS, then the terminal's width; else DEFAULT_WIDTH (a pipe)."""
    if requested:
        return requested
    return shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns
