"""``graphdoctor report``: a report as a terminal summary, markdown for an issue, or JSON."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from graphdoctor.cli.common import handle_errors
from graphdoctor.cli.output import deliver, format_option
from graphdoctor.cli.reporting import (
    GIVEN_HELP,
    child_option,
    chosen,
    fail_on_option,
    gate_exit,
    open_given,
    redacted,
    reports_argument,
    width,
)
from graphdoctor.report import gates
from graphdoctor.report.gates import CONDITIONS, GATE_EXIT, describe_conditions
from graphdoctor.report.redact import WHAT_GOES
from graphdoctor.report.render.formats import REPORT_FORMATS, Options

REPORT_HELP = f"""Print a summary of REPORT (a file written by graphdoctor run; .gz is fine).

{GIVEN_HELP}

\b
  graphdoctor report run.json                        summary for the terminal
  graphdoctor report run.json -f markdown > bug.md   paste into a GitHub issue
  graphdoctor report run.json -f json --redact -o share.json
                                   a copy safe to attach to a public ticket
  graphdoctor report run.json --fail-on capture-failed,neutral
                                   gate a saved report in CI
  graphdoctor report job.rank*.json                  a job's ranks as one

--redact leaves out {WHAT_GOES}.

\b
--fail-on conditions:
{describe_conditions()}

\b
Exit codes:
  0  the report was read and no --fail-on condition holds
  2  the report cannot be read (missing, empty, truncated, not a
     graphdoctor report, or from a newer schema), or a usage error
  {GATE_EXIT}  a --fail-on condition holds
"""


@click.command("report", help=REPORT_HELP)
@reports_argument()
@format_option(REPORT_FORMATS)
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Write to this file instead of stdout (.gz compresses).")
@click.option("--redact", is_flag=True, help="Leave out private paths, names, environment "
                                              "values and arguments (see above).")
@click.option("--width", "columns", type=click.IntRange(40, 1000), metavar="COLUMNS",
              help="Width of the text summary (default: the terminal's, or 100).")
@child_option()
@fail_on_option(CONDITIONS, "listed above")
@handle_errors
def report(report_files: tuple[Path, ...], output_format: str, output: Path | None, redact: bool,
           columns: int | None, child: int | None, fail_on: tuple[str, ...]) -> None:
    document = chosen(open_given(report_files), child)
    shown = redacted(document) if redact else document
    deliver(shown, REPORT_FORMATS[output_format], output, Options(width=width(columns)))
    sys.exit(gate_exit(gates.check(document, fail_on)))
