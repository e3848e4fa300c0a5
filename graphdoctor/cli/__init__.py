"""The ``graphdoctor`` command: a click group of thin commands, one module each.

Heavy imports (torch, textual) happen inside the commands, so ``--help`` is instant and the
viewing commands work where torch is not installed. Library errors become one line on
stderr and an exit code in one place, :func:`graphdoctor.cli.common.handle_errors`.
"""

from __future__ import annotations

import click

from graphdoctor import __version__
from graphdoctor.cli.run import run


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="graphdoctor")
def main() -> None:
    """Find out why CUDA graph capture failed, gave no speedup, or is unsafe.

    \b
    graphdoctor run script.py [ARGS]...   record a run and diagnose it
    graphdoctor view REPORT               explore a report in the terminal
    """


main.add_command(run)
