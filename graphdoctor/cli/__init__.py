"""The ``graphdoctor`` command: a click group of thin commands, one module each.

Each command's module is imported only when that command runs (:data:`COMMANDS`), and heavy
imports (torch, textual) happen inside the commands, so ``--version`` is quick and the
viewing commands work where torch is not installed. Library errors become one line on
stderr and an exit code in one place, :func:`graphdoctor.cli.common.handle_errors`, and
usage errors the same line (:class:`graphdoctor.cli.common.CommandGroup`).
"""

from __future__ import annotations

import click

from graphdoctor.cli.common import CommandGroup
from graphdoctor.version import __version__

COMMANDS = {
    "run": "graphdoctor.cli.run:run",
    "rules": "graphdoctor.cli.rules_cmd:rules",
    "explain": "graphdoctor.cli.rules_cmd:explain",
    "report": "graphdoctor.cli.report_cmd:report",
    "export": "graphdoctor.cli.export_cmd:export",
    "diff": "graphdoctor.cli.diff_cmd:diff",
    "compare": "graphdoctor.cli.compare_cmd:compare",
    "merge": "graphdoctor.cli.merge_cmd:merge",
    "view": "graphdoctor.cli.view_cmd:view",
    "fix": "graphdoctor.cli.fix_cmd:fix",
}
"""Each command and where it is defined: imported only when it runs, or shows its help."""


@click.group(cls=CommandGroup, lazy=COMMANDS,
             context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="graphdoctor")
def main() -> None:
    """Find out why CUDA graph capture failed, gave no speedup, or is unsafe.

    \b
    graphdoctor run script.py [ARGS]...   record a run and diagnose it
    graphdoctor view REPORT               explore a report in the terminal
    graphdoctor report REPORT             summary; -f markdown for a GitHub issue
    graphdoctor export REPORT             Chrome trace for Perfetto
    graphdoctor diff A B                  what changed between two runs
    graphdoctor compare script.py         as written vs CUDA graphs off, per call
    graphdoctor merge job.rank*.json      one report of a job's ranks
    graphdoctor fix REPORT                fixes as a patch, proven with --verify
    """

