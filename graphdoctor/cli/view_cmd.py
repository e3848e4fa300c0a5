"""``graphdoctor view``: explore a report in the terminal UI."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from graphdoctor.cli import colour
from graphdoctor.cli.common import handle_errors, say
from graphdoctor.cli.reporting import GIVEN_HELP, child_option, chosen
from graphdoctor.columns import term_list
from graphdoctor.demo import DEFAULT_DEMO, DEMOS
from graphdoctor.errors import GraphDoctorError

if TYPE_CHECKING:
    from graphdoctor.report.document import Report

DEMO_LIST = term_list(DEMOS.items())
VIEW_HELP = f"""Explore REPORT in the terminal: summary, findings, a timeline of
what happened when, allocations and graphs. Press ? inside for every key.

{GIVEN_HELP}

\b
  graphdoctor view run.json            a report written by graphdoctor run
  graphdoctor view --demo              a report recorded on a GPU, bundled
  graphdoctor view --demo launch_bound
  graphdoctor view job.rank*.json      every rank of a job, on one timeline
  graphdoctor view --follow run.spool  a recording another process is making,
                                       read as it grows (--keep-spool's file)

\b
Demos (recorded on an NVIDIA H100):
{DEMO_LIST}

\b
Without a terminal (CI, a pipe) nothing interactive starts: the text
summary is printed instead, as `graphdoctor report` would.
"""


@click.command("view", help=VIEW_HELP)
@click.argument("report_files", metavar="[REPORT]...", nargs=-1,
                type=click.Path(dir_okay=True, path_type=Path))
@click.option("--demo", is_flag=False, flag_value=DEFAULT_DEMO, default=None, metavar="[NAME]",
              help=f"Open a bundled report instead (default: {DEFAULT_DEMO}).")
@click.option("--follow", is_flag=True,
              help="REPORT is a recording still being written (a spool, one per rank): show "
                   "it as it grows, read about once a second, and its report once it ends.")
@child_option()
@handle_errors
def view(report_files: tuple[Path, ...], demo: str | None, follow: bool,
         child: int | None) -> None:
    if follow:
        _follow(report_files, demo)
        return
    report, name = _open(report_files, demo)
    report = chosen(report, child)
    from graphdoctor.tui import can_run_interactively, run_app

    if not can_run_interactively():
        _print_summary(report)
        return
    _colours_as_asked()
    _raise_if_crashed(run_app(report, name))


def _colours_as_asked() -> None:
    if colour.chosen() == colour.NEVER:
        os.environ["NO_COLOR"] = "1"  # what Textual reads


def _follow(spools: tuple[Path, ...], demo: str | None) -> None:
    """``--follow``: the live view of spools another process writes."""
    if demo is not None or not spools:
        raise GraphDoctorError("--follow needs the recording to follow: graphdoctor view "
                               "--follow run.spool.jsonl (one file per rank)")
    from graphdoctor.report.live import follow_spools
    from graphdoctor.tui import can_run_interactively, run_live

    feed = follow_spools(spools)
    if not can_run_interactively():
        report = feed.look()
        if report is None:
            raise GraphDoctorError(f"{spools[0]}: nothing recorded in it yet")
        _print_summary(report)
        return
    _colours_as_asked()
    _raise_if_crashed(run_live(feed, spools[0].name, following=", ".join(map(str, spools))))


def _raise_if_crashed(crash: str | None) -> None:
    if crash is not None:
        raise ViewerCrashed(f"the viewer crashed ({crash}); this is a bug in graphdoctor: "
                            "please report it with the traceback above")


class ViewerCrashed(GraphDoctorError):
    """The terminal UI itself failed: a bug in graphdoctor, not a problem with the report."""

    exit_code = 1


def _open(report_files: tuple[Path, ...], demo: str | None) -> tuple[Report, str]:
    if report_files and demo is not None:
        raise GraphDoctorError("give a REPORT or --demo, not both")
    if demo is not None:
        from graphdoctor.demo import load_demo

        return load_demo(demo), f"demo: {demo}"
    if not report_files:
        raise GraphDoctorError("give a REPORT to view (or --demo for a bundled one)")
    from graphdoctor.cli.reporting import open_given

    name = str(report_files[0]) + (f" and {len(report_files) - 1} more"
                                   if len(report_files) > 1 else "")
    return open_given(report_files), name


def _print_summary(report: Report) -> None:
    from graphdoctor.report.render.text import render_text

    say("graphdoctor: not a terminal, so nothing interactive starts; the summary follows")
    click.echo(render_text(report, width=100, color=False), nl=False)
