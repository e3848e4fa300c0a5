"""The ``graphdoctor`` command: a click group of thin commands, one module each.

Heavy imports (torch, textual) happen inside the commands, so ``--help`` is instant and the
viewing commands work where torch is not installed. Library errors become one line on
stderr and an exit code in one place, :func:`graphdoctor.cli.common.handle_errors`, and
usage errors the same line (:class:`graphdoctor.cli.common.CommandGroup`).
"""

from __future__ import annotations

import click

from graphdoctor.cli.common import CommandGroup
from graphdoctor.cli.compare_cmd import compare
from graphdoctor.cli.diff_cmd import diff
from graphdoctor.cli.export_cmd import export
from graphdoctor.cli.fix_cmd import fix
from graphdoctor.cli.merge_cmd import merge
from graphdoctor.cli.report_cmd import report
from graphdoctor.cli.rules_cmd import explain, rules
from graphdoctor.cli.run import run
from graphdoctor.cli.view_cmd import view
from graphdoctor.version import __version__


@click.group(cls=CommandGroup, context_settings={"help_option_names": ["-h", "--help"]})
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


main.add_command(run)
main.add_command(rules)
main.add_command(explain)
main.add_command(report)
main.add_command(export)
main.add_command(diff)
main.add_command(compare)
main.add_command(merge)
main.add_command(view)
main.add_command(fix)
