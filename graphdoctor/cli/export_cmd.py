"""``graphdoctor export``: a report in another tool's format (the Chrome trace, for Perfetto;
one graph's nodes as Graphviz DOT)."""

from __future__ import annotations

from pathlib import Path

import click

from graphdoctor.cli.common import handle_errors
from graphdoctor.cli.output import deliver, format_option
from graphdoctor.cli.reporting import (
    GIVEN_HELP,
    child_option,
    chosen,
    open_given,
    redacted,
    reports_argument,
)
from graphdoctor.report import redact as redaction
from graphdoctor.report.render.formats import EXPORT_FORMATS, Options
from graphdoctor.trace.model import PHASES

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
@format_option(EXPORT_FORMATS, "The format to write.")
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
    if redact:
        document = redacted(document)
    options = Options(phases=phases, graph=graph_id, rank=-1 if rank is None else rank)
    deliver(document, EXPORT_FORMATS[output_format], output, options,
            named_after=report_files[0])
