"""What the commands share: the one place errors become exit codes, and report loading."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import click

from graphdoctor.clean_text import clean
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
            # One line, whatever the message quotes (a file name, a report's text): shown,
            # never obeyed by the terminal.
            message = " ".join(clean(str(error)).splitlines())
            click.echo(f"graphdoctor: error: {message}", err=True)
            sys.exit(error.exit_code)

    return wrapper


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
