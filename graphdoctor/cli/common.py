"""What the commands share: the one place errors become exit codes, and report loading."""

from __future__ import annotations

import functools
import importlib
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any, NoReturn, ParamSpec, TypeVar

import click

from graphdoctor.clean_text import clean_line
from graphdoctor.cli.colour import color_option
from graphdoctor.columns import notice, stderr_width
from graphdoctor.errors import GraphDoctorError

P = ParamSpec("P")
R = TypeVar("R")


def handle_errors(command: Callable[P, R]) -> Callable[P, R]:
    """Turn a GraphDoctorError into ``graphdoctor: error: <message>`` and its exit code."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except GraphDoctorError as error:
            fail(str(error), error.exit_code)

    return wrapper


USAGE_EXIT = 2


class CommandGroup(click.Group):
    """The command group: every command gets the options all share (``--color``), and
    usage errors read as every other error does: one line, ``graphdoctor: error: ...``,
    exit code 2, and where to read more, instead of click's four lines of usage, hint and
    error.

    Its commands are named with where they live (``lazy``: name to ``module:attribute``)
    and imported when used, so ``--version``, or ``view``, does not wait for the imports of
    every other command (``run``'s launcher, ``fix``'s patchers, the renderers)."""

    def __init__(self, *args: Any, lazy: Mapping[str, str] | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        cmd.params.append(color_option())
        super().add_command(cmd, name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy and cmd_name not in self.commands:
            self.add_command(_imported(self.lazy[cmd_name]), cmd_name)
        return super().get_command(ctx, cmd_name)

    def resolve_command(self, ctx: click.Context,
                        args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        if args and args[0] not in self.list_commands(ctx):  # a typo: click suggests a name
            for name in self.lazy:  # from those it holds, so it is handed them all
                self.get_command(ctx, name)
        return super().resolve_command(ctx, args)

    def main(self, *args: Any, **kwargs: Any) -> Any:
        kwargs["standalone_mode"] = False
        try:
            code = super().main(*args, **kwargs)
        except _NO_ARGS_IS_HELP as error:  # `graphdoctor` alone: the help, as --help prints it
            click.echo(error.ctx.get_help() if error.ctx is not None else error.format_message())
            code = 0
        except click.ClickException as error:
            fail(_said(error), error.exit_code)
        except click.Abort:
            fail("aborted", 1)
        sys.exit(code if isinstance(code, int) else 0)


class _NeverRaised(click.UsageError):
    """Stands for click 8.2's NoArgsIsHelpError on click 8.1, which prints the help itself."""


# `graphdoctor` alone: click 8.2 on raises this usage error where 8.1 printed the help; the
# help is what is wanted either way, with exit code 0, as git, pip and memray do.
_NO_ARGS_IS_HELP: type[click.UsageError] = getattr(click.exceptions, "NoArgsIsHelpError",
                                                   _NeverRaised)


def _imported(where: str) -> click.Command:
    """The command at ``module:attribute``, its module imported now."""
    module, attribute = where.split(":")
    command = getattr(importlib.import_module(module), attribute)
    if not isinstance(command, click.Command):
        raise TypeError(f"{where} is a {type(command).__name__}, not a click command")
    return command


def _said(error: click.ClickException) -> str:
    """click's message as one clause ("no such option '--bogus'"), then where to read more."""
    message = error.format_message().strip().replace(". (Did", " (did").removesuffix(".")
    message = message[:1].lower() + message[1:]
    context = getattr(error, "ctx", None)
    return f"{message}; see {context.command_path} --help" if context is not None else message


def fail(message: str, exit_code: int = USAGE_EXIT) -> NoReturn:
    """``graphdoctor: error: <message>`` on one line of stderr, and exit: whatever the
    message quotes (a file name, a report's text) is shown, never obeyed by the terminal."""
    click.echo(f"graphdoctor: error: {clean_line(message)}", err=True)
    sys.exit(exit_code)


def say(message: str, whole: bool = False) -> None:
    """graphdoctor's own messages go to stderr, so the script's stdout stays its own,
    wrapped to the terminal (:func:`graphdoctor.columns.notice`); a ``whole`` line (a
    command to paste into a shell) is never broken."""
    try:
        click.echo(message if whole else notice(message, stderr_width()), err=True)
    except OSError:  # the terminal is gone (closed, hung up): nobody is left to read it
        _discard_stderr()


def _discard_stderr() -> None:
    """Send stderr to the null device, so that what is still buffered, and what comes
    later, cannot fail again and change the exit code."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stderr.fileno())
    os.close(devnull)
