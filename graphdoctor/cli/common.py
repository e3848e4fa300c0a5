"""What the commands share: the one place errors become exit codes, and report loading."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from graphdoctor.errors import GraphDoctorError
from graphdoctor.report import facts

F = TypeVar("F", bound=Callable[..., Any])


def handle_errors(command: F) -> F:
    """Turn a GraphDoctorError into ``graphdoctor: error: <message>`` and its exit code."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except GraphDoctorError as error:
            # One line, whatever the message quotes (a file name, a report's text): shown,
            # never obeyed by the terminal.
            message = " ".join(facts.clean(str(error)).splitlines())
            click.echo(f"graphdoctor: error: {message}", err=True)
            sys.exit(error.exit_code)

    return wrapper  # type: ignore[return-value]


def say(message: str) -> None:
    """graphdoctor's own messages go to stderr, so the script's stdout stays its own."""
    click.echo(message, err=True)
