"""What the commands share: the one place errors become exit codes, and report loading."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import Any, NoReturn, ParamSpec, TypeVar

import click

from graphdoctor.clean_text import clean
from graphdoctor.cli.colour import color_option
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
    error."""

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        cmd.params.append(color_option())
        super().add_command(cmd, name)

    def main(self, *args: Any, **kwargs: Any) -> Any:
        kwargs["standalone_mode"] = False
        try:
            code = super().main(*args, **kwargs)
        except click.ClickException as error:
            fail(_said(error), error.exit_code)
        except click.Abort:
            fail("aborted", 1)
        sys.exit(code if isinstance(code, int) else 0)


def _said(error: click.ClickException) -> str:
    """click's message as one clause ("no such option '--bogus'"), then where to read more."""
    message = error.format_message().strip().replace(". (Did", " (did").removesuffix(".")
    message = message[:1].lower() + message[1:]
    context = getattr(error, "ctx", None)
    return f"{message}; see {context.command_path} --help" if context is not None else message


def fail(message: str, exit_code: int = USAGE_EXIT) -> NoReturn:
    """``graphdoctor: error: <message>`` on one line of stderr, and exit: whatever the
    message quotes (a file name, a report's text) is shown, never obeyed by the terminal."""
    click.echo(f"graphdoctor: error: {' '.join(clean(message).split())}", err=True)
    sys.exit(exit_code)


def say(message: str) -> None:
    """graphdoctor's own messages go to stderr, so the script's stdout stays its own."""
    try:
        click.echo(message, err=True)
    except OSError:  # the terminal is gone (closed, hung up): nobody is left to read it
        _discard_stderr()


def _discard_stderr() -> None:
    """Send stderr to the null device, so that what is still buffered, and what comes
    later, cannot fail again and change the exit code."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stderr.fileno())
    os.close(devnull)
