"""``graphdoctor export``: a report in another tool's format (the Chrome trace, for Perfetto)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from graphdoctor.cli.common import handle_errors, say
from graphdoctor.cli.reporting import write
from graphdoctor.report import facts
from graphdoctor.report import redact as redaction
from graphdoctor.report.chrome_trace import to_chrome_trace
from graphdoctor.report.io import load
from graphdoctor.trace.model import PHASES

LARGE_BYTES = 300 * 2**20  # Perfetto's UI struggles well before 1 GB (google/perfetto#99)

EXPORT_HELP = """Write REPORT's events in another tool's format.

\b
chrome-trace is the Trace Event Format that https://ui.perfetto.dev and
chrome://tracing open: phases, graph captures, each Python thread's calls,
replays and syncs, torch.compile events, one lane per CUDA stream with each
replay's GPU time, and memory and GPU utilisation as counters.

\b
  graphdoctor export run.json -o run.trace.json
  graphdoctor export run.json --phase capture --phase replay -o small.json.gz

\b
Exit codes: 0 written; 2 the report cannot be read or the file cannot be written.
"""


@click.command("export", help=EXPORT_HELP)
@click.argument("report_file", metavar="REPORT", type=click.Path(path_type=Path))
@click.option("-f", "--format", "output_format", default="chrome-trace", show_default=True,
              type=click.Choice(["chrome-trace"]), help="The format to write.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
              help="The file to write (.gz compresses; - for stdout). Default: REPORT's "
                   "name with .trace.json, in the current folder.")
@click.option("--phase", "phases", multiple=True, type=click.Choice(PHASES),
              help="Only the moments in this phase (repeat for several); keeps big runs small.")
@click.option("--redact", is_flag=True, help=f"Leave out {redaction.WHAT_GOES}.")
@handle_errors
def export(report_file: Path, output_format: str, output: Path | None, phases: tuple[str, ...],
           redact: bool) -> None:
    document = load(report_file)
    if redact:
        document = redaction.redact(document)
    trace = to_chrome_trace(document, phases)
    data = facts.clean_json(json.dumps(trace, separators=(",", ":"), ensure_ascii=False)).encode()
    output = output or default_output(report_file)
    write(data, output)
    if str(output) != "-":
        _tell(output, len(trace["traceEvents"]), len(data))


def default_output(report_file: Path) -> Path:
    """In the current folder, where the user is: the report's own folder may be one they
    cannot or should not write in (a bundled demo's is inside the installed package)."""
    name = report_file.name.removesuffix(".gz").removesuffix(".json")
    return Path(f"{name}.trace.json")


def _tell(output: Path, events: int, size: int) -> None:
    say(f"graphdoctor: wrote {events:,} trace events to {output}; "
        "open it at https://ui.perfetto.dev or chrome://tracing")
    if size > LARGE_BYTES:
        say(f"graphdoctor: the trace is {size / 2**20:.0f} MiB of JSON, more than Perfetto's "
            "UI opens comfortably; try --phase replay (or capture) to export less")
