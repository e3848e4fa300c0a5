"""Whether output is coloured: ``--color auto|always|never`` on every command, and in
``auto`` the conventions terminals and CI systems agree on, in the order Python itself
reads them: a non-empty NO_COLOR turns colour off (no-color.org), a non-empty FORCE_COLOR
turns it on (force-color.org), TERM=dumb turns it off, else colour goes to a terminal only.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

import click

AUTO, ALWAYS, NEVER = "auto", "always", "never"
CHOSEN = "graphdoctor.color"  # where the command's choice is kept, in click's context


def color_option() -> click.Option:
    """``--color``, added to every command by the command group."""
    return click.Option(["--color", "color_choice"], type=click.Choice([AUTO, ALWAYS, NEVER]),
                        default=AUTO, show_default=True, expose_value=False, is_eager=True,
                        callback=_remember, metavar="[auto|always|never]",
                        help="Colour the output: auto (a terminal, unless NO_COLOR is set or "
                             "TERM=dumb; FORCE_COLOR forces it), always, or never.")


def _remember(context: click.Context, _: click.Parameter, value: Any) -> Any:
    context.meta[CHOSEN] = value
    return value


def chosen() -> str:
    """The running command's ``--color``; auto outside a command."""
    context = click.get_current_context(silent=True)
    return str(context.meta.get(CHOSEN, AUTO)) if context is not None else AUTO


def use_color(to_terminal: bool) -> bool:
    """Whether to colour what goes to stdout (``to_terminal``: stdout, not a file)."""
    choice = chosen()
    if choice != AUTO:
        return choice == ALWAYS
    return to_terminal and wanted(os.environ, sys.stdout.isatty())


def wanted(environ: Mapping[str, str], tty: bool) -> bool:
    """``auto``'s answer for an environment and whether stdout is a terminal."""
    if environ.get("NO_COLOR"):
        return False
    if environ.get("FORCE_COLOR"):
        return True
    return tty and environ.get("TERM") != "dumb"
