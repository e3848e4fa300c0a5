"""``graphdoctor merge``: one report of a job from the reports its ranks wrote apart."""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from graphdoctor.cli.common import handle_errors, say
from graphdoctor.cli.output import named
from graphdoctor.cli.reporting import open_given, reports_argument
from graphdoctor.errors import GraphDoctorError
from graphdoctor.files.run_files import job_report
from graphdoctor.files.writing import check_writable
from graphdoctor.report.io import save

MERGE_HELP = """Combine the reports (or spools) of a job's ranks into one report.

Under torchrun (or a scheduler) every rank runs graphdoctor and writes its
own report, on its own host: job.rank0.json, job.rank1.json... Merged, the
cross-rank rules (ranks that diverged, a hang, one rank's failed capture)
see the whole job; ranks are ordered by global rank, and their times set on
one axis: by each host's wall clock, and across hosts by the barriers the
ranks left together. Files from different jobs are refused.

\b
  graphdoctor merge node0/job.rank*.json node1/job.rank*.json -o job.json
  graphdoctor merge reports/             every report in a folder
  graphdoctor view job.json

report, view and export take the same files directly, without writing
the merged report. A file -o names that exists is written over only with
--force (as memray does).

\b
Exit codes: 0 written; 2 the files cannot be read, are not one job, or the
report cannot be written (-o exists, without --force).
"""


@click.command("merge", help=MERGE_HELP)
@reports_argument()
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="The report to write (.gz compresses). Default: the ranks' report name "
                   "without .rankN, in the current folder, never over an existing file.")
@click.option("-f", "--force", is_flag=True,
              help="Write over the file -o names if it exists (else refused, and nothing is "
                   "read).")
@handle_errors
def merge(report_files: tuple[Path, ...], output: Path | None, force: bool) -> None:
    if output is not None and not force and output.is_file():  # a device or FIFO is written to
        raise GraphDoctorError(f"{output} exists; merge writes over it only with --force")
    if output is not None:  # a path no report can go to is said before the ranks are read
        check_writable(named(output))
    document = open_given(report_files)
    written = save(document, output or job_report(report_files[0]))
    say(f"graphdoctor: wrote the report of {len(document.ranks)} ranks to {written}")
    say(f"  explore it:  graphdoctor view {shlex.quote(str(written))}", whole=True)
