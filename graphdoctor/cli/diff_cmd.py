"""``graphdoctor diff``: what changed between two runs, with a CI gate on regressions."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from graphdoctor.cli.common import handle_errors
from graphdoctor.cli.output import deliver, format_option
from graphdoctor.cli.reporting import (
    fail_on_option,
    gate_exit,
    open_given,
    width,
)
from graphdoctor.report import diff as diffing
from graphdoctor.report.gates import (
    DIFF_CONDITIONS,
    GATE_EXIT,
    check_diff,
    describe_diff_conditions,
)
from graphdoctor.report.render.formats import DIFF_FORMATS, Options

DIFF_HELP = f"""Show what changed from run A (the baseline) to run B.

\b
Verdicts (and speedups), findings that appeared or went away, failed
captures, compile events, the run's outcome, the environment and the
timings. Verdicts are matched by subject, findings by rule, file and code
line, so ids that shift between runs do not matter.

\b
  graphdoctor diff main.json branch.json
  graphdoctor diff main.json branch.json -f markdown    for a pull request
  graphdoctor diff main.json branch.json --fail-on regression

\b
--fail-on conditions:
{describe_diff_conditions()}

\b
Exit codes:
  0  compared, and no --fail-on condition holds (differences alone are not
     an error, unlike diff(1))
  2  a report cannot be read, or a usage error
  {GATE_EXIT}  a --fail-on condition holds
"""


@click.command("diff", help=DIFF_HELP)
@click.argument("before_file", metavar="A", type=click.Path(path_type=Path))
@click.argument("after_file", metavar="B", type=click.Path(path_type=Path))
@format_option(DIFF_FORMATS)
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Write to this file instead of stdout.")
@click.option("--tolerance", type=click.FloatRange(0, 100), default=10, show_default=True,
              metavar="PERCENT", help="How far a speedup may fall before it is a regression.")
@click.option("--width", "columns", type=click.IntRange(40, 1000), metavar="COLUMNS",
              help="Width of the text output (default: the terminal's, or 100).")
@fail_on_option(DIFF_CONDITIONS, "listed above", rule_ids=False)
@handle_errors
def diff(before_file: Path, after_file: Path, output_format: str, output: Path | None,
         tolerance: float, columns: int | None, fail_on: tuple[str, ...]) -> None:
    result = diffing.compare(open_given([before_file]), open_given([after_file]), str(before_file),
                             str(after_file), tolerance / 100)
    deliver(result, DIFF_FORMATS[output_format], output, Options(width=width(columns)))
    sys.exit(gate_exit(check_diff(result, fail_on)))
