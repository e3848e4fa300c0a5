"""``graphdoctor compare``: run a script under named variants and compare per call."""

from __future__ import annotations

import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from graphdoctor.cli.baseline_run import assembled
from graphdoctor.cli.common import handle_errors, say
from graphdoctor.cli.output import deliver, format_option, to_stdout
from graphdoctor.cli.reporting import fail_on_option, gate_exit, width
from graphdoctor.cli.run import check_target
from graphdoctor.errors import GraphDoctorError
from graphdoctor.files.run_files import RunFiles, compare_report
from graphdoctor.launch.variants import (
    AS_WRITTEN,
    VARIANT_HELP,
    WITHOUT_GRAPHS,
    Variant,
    all_variants,
    parse_variant,
    schedule,
)
from graphdoctor.report.compare import CompareRun, VariantInfo, compared
from graphdoctor.report.gates import CONDITIONS, GATE_EXIT, describe_conditions
from graphdoctor.report.render.formats import COMPARE_FORMATS, Options
from graphdoctor.trace.endings import INTERRUPTED

if TYPE_CHECKING:
    from graphdoctor.report.document import Report
    from graphdoctor.trace.model import Trace

COMPARE_HELP = f"""Run TARGET under several variants and compare them per call.

\b
Variants: "as-written" (the script as it is), "graphs-off" (the same with CUDA
graphs off: torch.compile without them, make_graphed_callables' callables as
they are; raw torch.cuda.graph captures stay), and each --variant:
  --variant tf32:NVIDIA_TF32_OVERRIDE=1        an environment setting
  --variant bf16:--dtype bf16                  the script's own arguments
  --variant big:BATCH=64,SEQ=2048 --steps 20   both, settings first

Each run is a full graphdoctor run (a crash or --timeout still leaves its figures);
runs alternate in rotating order, --repeats times. Per graph and followed function
and per variant, the table gives p50 and p95 of GPU and host time per call, the
calls timed, and the variant's verdict. The as-written runs are measured against
the graphs-off run of the same repeat (as run --baseline does); the others alone.

\b
--fail-on conditions (checked on every run's report):
{describe_conditions()}

\b
Exit codes:
  0         every run exited 0 and no --fail-on condition holds
  the first run's exit code that is not 0, when no condition holds
  2         usage error
  {GATE_EXIT}         a --fail-on condition holds in some run
"""


@dataclass(frozen=True)
class _Recorded:
    order: int
    repeat: int
    variant: Variant
    exit_code: int
    trace: Trace


@click.command("compare", help=COMPARE_HELP, context_settings={
    "ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("-m", "module", is_flag=True, help="Run TARGET as a module, like python -m.")
@click.option("--variant", "variant_specs", multiple=True, metavar="NAME:SPEC",
              help=VARIANT_HELP + ".")
@click.option("--repeats", type=click.IntRange(min=1), default=2, show_default=True,
              help="Runs of each variant.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), metavar="SECONDS",
              help="Stop each run after SECONDS (the list of runs says it timed out).")
@format_option(COMPARE_FORMATS)
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the table (or JSON) to this file instead of stdout.")
@click.option("--keep-reports", type=click.Path(file_okay=False, path_type=Path),
              metavar="FOLDER", help="Also write each run's report there.")
@click.option("--width", "columns", type=click.IntRange(40, 1000), metavar="COLUMNS",
              help="Width of the table (default: the terminal's, or 100).")
@click.option("-q", "--quiet", is_flag=True, help="Say nothing while the runs go.")
@fail_on_option(CONDITIONS, "listed above")
@click.argument("target")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@handle_errors
def compare(module: bool, variant_specs: tuple[str, ...], repeats: int,
            timeout: float | None, output_format: str, output: Path | None,
            keep_reports: Path | None, columns: int | None, quiet: bool,
            fail_on: tuple[str, ...], target: str, args: tuple[str, ...]) -> None:
    check_target(target, module, args)
    variants = all_variants(tuple(parse_variant(spec) for spec in variant_specs))
    if keep_reports is not None and not keep_reports.is_dir():
        raise GraphDoctorError(f"no such folder for the reports: {keep_reports}")
    chosen = COMPARE_FORMATS[output_format]
    json_out = chosen.read_by_programs and to_stdout(output)
    recorded = _record_all(target, args, module, variants, repeats, timeout, quiet, json_out)
    runs = [_run_of(one, recorded, keep_reports) for one in recorded]
    result = compared(target, args, repeats, tuple(VariantInfo(v.name, v.env, v.args)
                                                   for v in variants), runs, fail_on)
    deliver(result, chosen, output, Options(width=width(columns)))
    sys.exit(gate_exit(list(result.trips), otherwise=result.exit_code))


def _record_all(target: str, args: tuple[str, ...], module: bool,
                variants: tuple[Variant, ...], repeats: int, timeout: float | None,
                quiet: bool, json_out: bool) -> list[_Recorded]:
    """Every run, in the rotating order; stops at a run the user interrupted. With JSON
    on stdout (``json_out``), the script's own prints go to stderr."""
    from graphdoctor.launch.supervisor import RunRequest, record

    order = schedule(variants, repeats)
    recorded: list[_Recorded] = []
    with tempfile.TemporaryDirectory(prefix="graphdoctor-compare-") as folder:
        for number, (repeat, variant) in enumerate(order):
            if not quiet:
                say(f"graphdoctor: compare run {number + 1}/{len(order)}: {variant.name} "
                    f"(repeat {repeat + 1})")
            files = RunFiles.of_compare_run(Path(folder), number)
            end = record(RunRequest(target, (*args, *variant.args), module, files,
                                    timeout_s=timeout, argv=tuple(sys.argv[1:]),
                                    env=variant.env, stdout_to_stderr=json_out))
            trace = assembled(end.spools[0], f"run {number + 1} ({variant.name})")
            if trace is not None:
                recorded.append(_Recorded(number, repeat, variant, end.exit_code, trace))
            if end.reason == INTERRUPTED:
                break
    return recorded


def _run_of(one: _Recorded, recorded: list[_Recorded], keep: Path | None) -> CompareRun:
    """One run's report, the as-written ones measured against the graphs-off run of their
    repeat."""
    baseline = next((r.trace for r in recorded if r.repeat == one.repeat
                     and r.variant == WITHOUT_GRAPHS), None) \
        if one.variant == AS_WRITTEN else None
    report = _report(one.trace, baseline)
    saved = _save(report, compare_report(keep, one.variant.name, one.repeat)) if keep else ""
    return CompareRun(one.variant.name, one.repeat, one.order, report, one.exit_code, saved)


def _report(trace: Trace, baseline: Trace | None) -> Report:
    from graphdoctor.diagnose import diagnose
    from graphdoctor.report.document import build
    from graphdoctor.report.source_lines import OwnRecording

    lines = OwnRecording(trace.meta)
    report = build(trace, diagnose(trace, read_line=lines, baseline=baseline), lines,
                   baseline=baseline)
    report.trace = lines.finished(report.trace)
    return report


def _save(report: Report, path: Path) -> str:
    from graphdoctor.report.io import save

    try:
        save(report, path)
    except GraphDoctorError as error:
        say(f"graphdoctor: {error}")
        return ""
    return str(path)
