"""Where a command's result goes: the one path from a rendered format to stdout or a file.

Every command that prints or writes a result (report, export, diff, compare) takes its
``--format`` choices from a registry of :mod:`graphdoctor.report.render.formats` and hands
the result here: rendered as the format renders it, with colour only for a terminal, written
to stdout (no ``-o``, or ``-o -``) or to the file ``-o`` names (``.gz`` compresses), as
:mod:`graphdoctor.files.writing` writes every file: never replacing what a link, a device or
a FIFO is. A format that is not printed (a Chrome trace) goes, without ``-o``, to a file
named after the report, in the current folder.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from graphdoctor.cli import colour
from graphdoctor.cli.common import say
from graphdoctor.errors import GraphDoctorError
from graphdoctor.files.compression import as_named
from graphdoctor.files.writing import write_file
from graphdoctor.report.render.formats import Format, Formats, Options

F = TypeVar("F", bound=Callable[..., Any])
S = TypeVar("S")
STDOUT = "-"


def format_option(formats: Formats[Any], described: str = "What to print.") -> Callable[[F], F]:
    """``-f/--format``: one of ``formats``' names, its first by default."""
    return click.option("-f", "--format", "output_format", default=formats.default.name,
                        show_default=True, type=click.Choice(formats.names()), help=described)


def deliver(subject: S, chosen: Format[S], output: Path | None, options: Options,
            named_after: Path | None = None) -> None:
    """``subject`` rendered in ``chosen`` and written where ``output`` says (see the module
    doc); ``named_after``: the report a file of a format not printed is named after."""
    problem = chosen.problem(options)
    if problem is not None:
        raise click.UsageError(problem)
    if output is None and not chosen.to_terminal and named_after is not None:
        output = default_output(named_after, chosen.file_suffix(options))
    rendered = chosen.render(subject, dataclasses.replace(options, color=use_color(output)))
    data = rendered.content.encode() if isinstance(rendered.content, str) else rendered.content
    if output is None or to_stdout(output):
        _to_stdout(data, chosen)
        return
    write_file(named(output), as_named(output, data))
    for line in rendered.said(str(output)):
        say(line)


def to_stdout(output: Path | None) -> bool:
    """Whether a result goes to stdout: no ``-o``, or ``-o -``."""
    return output is None or str(output) == STDOUT


def use_color(output: Path | None) -> bool:
    """Colour for what goes to stdout as ``--color`` and the environment say (never for a
    file written with -o, unless --color always)."""
    return colour.use_color(to_terminal=to_stdout(output))


def named(output: Path, option: str = "-o") -> Path:
    """The file ``option`` (``-o``, ``--keep-spool``) names, or GraphDoctorError where it
    names none (``-o ""`` reaches a command as Path(""), which is ".")."""
    if str(output) in ("", "."):
        raise GraphDoctorError(f"{option} needs a file name")
    return output


def default_output(report_file: Path, suffix: str) -> Path:
    """In the current folder, where the user is: the report's own folder may be one they
    cannot or should not write in (a bundled demo's is inside the installed package)."""
    name = report_file.name.removesuffix(".gz").removesuffix(".json")
    return Path(f"{name}{suffix}")


def _to_stdout(data: bytes, chosen: Format[Any]) -> None:
    if chosen.binary and sys.stdout.isatty():
        raise GraphDoctorError(f"{chosen.name} is binary, not for a terminal: name a file "
                               "with -o, or pipe it")
    try:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    except BrokenPipeError:  # `graphdoctor report r.json | head`: the reader left, fine
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
