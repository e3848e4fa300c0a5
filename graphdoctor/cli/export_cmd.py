"""``graphdoctor export``: a report in another tool's format (the Chrome trace, for Perfetto;
one graph's nodes as Graphviz DOT)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from graphdoctor.clean_text import clean_json
from graphdoctor.cli.common import handle_errors, say
from graphdoctor.cli.reporting import (
    GIVEN_HELP,
    child_option,
    chosen,
    open_given,
    redacted,
    reports_argument,
    write,
)
from graphdoctor.report import redact as redaction
from graphdoctor.report.document import Report
from graphdoctor.report.render.chrome_trace import to_chrome_trace
from graphdoctor.report.render.graph_dot import to_dot
from graphdoctor.trace.model import PHASES

CHROME_TRACE, DOT = "chrome-trace", "dot"
LARGE_BYTES = 300 * 2**20  # Perfetto's UI struggles well before 1 GB (google/perfetto#99)

EXPORT_HELP = f"""Write REPORT's events in another tool's format.

{GIVEN_HELP}

\b
chrome-trace is the Trace Event Format that https://ui.perfetto.dev and
chrome://tracing open: phases, graph captures, each Python thread's calls,
replays and syncs, torch.compile events, one lane per CUDA stream with each
replay's GPU time, its graph's nodes (where estimated to run) and the eager
kernels a native program ran, arrows from each launch to its replay and
first kernel, and memory and GPU utilisation as counters.

dot is one captured graph (--graph N; --rank R in a multi-rank report) as
Graphviz DOT: its nodes (kernels by name, memcpy, memset, host...) and their
dependencies, from the anatomy the report keeps (graphs up to 4,096 nodes).

\b
  graphdoctor export run.json -o run.trace.json
  graphdoctor export run.json --phase capture --phase replay -o small.json.gz
  graphdoctor export run.json -f dot --graph 0 -o g0.dot && dot -Tsvg g0.dot

\b
Exit codes: 0 written; 2 the report cannot be read or the file not written.
"""


@click.command("export", help=EXPORT_HELP)
@reports_argument()
@click.option("-f", "--format", "output_format", default="chrome-trace", show_default=True,
              type=click.Choice([CHROME_TRACE, DOT]), help="The format to write.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
              help="The file to write (.gz compresses; - for stdout). Default: REPORT's "
                   "name with .trace.json, in the current folder.")
@click.option("--phase", "phases", multiple=True, type=click.Choice(PHASES),
              help="Only the moments in this phase (repeat for several); keeps big runs small.")
@click.option("--graph", "graph_id", type=int, metavar="N",
              help="With --format dot: the graph to draw (its id in the report).")
@click.option("--rank", type=click.IntRange(min=0), default=None, metavar="R",
              help="With --format dot, in a multi-rank report: the rank whose graph N to draw.")
@click.option("--redact", is_flag=True, help=f"Leave out {redaction.WHAT_GOES}.")
@child_option()
@handle_errors
def export(report_files: tuple[Path, ...], output_format: str, output: Path | None,
           phases: tuple[str, ...], graph_id: int | None, rank: int | None, redact: bool,
           child: int | None) -> None:
    document = chosen(open_given(report_files), child)
    report_file = report_files[0]
    if redact:
        document = redacted(document)
    if output_format == DOT:
        _export_dot(document, report_file, output, graph_id, rank)
        return
    trace = to_chrome_trace(document, phases)
    data = clean_json(json.dumps(trace, separators=(",", ":"), ensure_ascii=False)).encode()
    output = output or default_output(report_file)
    write(data, output)
    if str(output) != "-":
        _tell(output, len(trace["traceEvents"]), len(data))


def _export_dot(document: Report, report_file: Path, output: Path | None,
                graph_id: int | None, rank: int | None) -> None:
    if graph_id is None:
        raise click.UsageError("--format dot draws one graph: name it with --graph N")
    output = output or default_output(report_file, f".graph{graph_id}.dot")
    write(to_dot(document, graph_id, -1 if rank is None else rank).encode(), output)
    if str(output) != "-":
        say(f"graphdoctor: wrote graph {graph_id} to {output}; draw it with "
            f"dot -Tsvg {output} -o graph{graph_id}.svg")


def default_output(report_file: Path, suffix: str = ".trace.json") -> Path:
    """In the current folder, where the user is: the report's own folder may be one they
    cannot or should not write in (a bundled demo's is inside the installed package)."""
    name = report_file.name.removesuffix(".gz").removesuffix(".json")
    return Path(f"{name}{suffix}")


def _tell(output: Path, events: int, size: int) -> None:
    say(f"graphdoctor: wrote {events:,} trace events to {output}; "
        "open it at https://ui.perfetto.dev or chrome://tracing")
    if size > LARGE_BYTES:
        say(f"graphdoctor: the trace is {size / 2**20:.0f} MiB of JSON, more than Perfetto's "
            "UI opens comfortably; try --phase replay (or capture) to export less")
