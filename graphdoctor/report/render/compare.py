"""``graphdoctor compare``'s table for a terminal: a row per subject and variant, then each
variant's verdicts, the runs in the order they ran, and what each variant set.

Every string from a report goes through :func:`clean`, as in the report summary, and
the table is drawn through :class:`~graphdoctor.report.render.terminal.Printable`."""

from __future__ import annotations

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from graphdoctor import units
from graphdoctor.clean_text import clean
from graphdoctor.diagnose.measure import Stat
from graphdoctor.report.compare import CompareResult, Row
from graphdoctor.report.render.terminal import item, printed
from graphdoctor.report.render.text import VERDICT_STYLE
from graphdoctor.trace import endings

COLUMNS = ("subject", "variant", "timed", "calls", "GPU p50", "GPU p95", "host p50",
           "host p95", "verdict")
NO_WRAP = frozenset(COLUMNS) - {"subject"}


def render_compare(result: CompareResult, *, width: int = 100, color: bool = False) -> str:
    parts = (_title(result), _table(result), _verdicts(result), _runs(result),
             _variants(result), _gates(result))
    return printed((part for part in parts if part is not None), width, color)


def _t(text: object, style: str = "") -> Text:
    return Text(clean(str(text)), style=style)


def _heading(text: str) -> Text:
    return Text(f"\n{text}", style="bold")


def _title(result: CompareResult) -> Text:
    command = " ".join([result.target, *result.args])
    return Text.assemble(("graphdoctor compare: ", "bold"), _t(command, "bold"),
                         _t(f"\n{units.counted(result.repeats, 'repeat')} of "
                            f"{units.counted(len(result.variants), 'variant')}, run in "
                            "rotating order; per call: p50 and p95 of each"))


def _table(result: CompareResult) -> RenderableType:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=True, expand=False)
    for column in COLUMNS:
        table.add_column(column, overflow="fold", no_wrap=column in NO_WRAP,
                         justify="right" if " p" in column or column == "calls" else "left")
    shown = ""
    for row in result.rows:
        subject = row.subject if row.subject != shown else ""
        shown = row.subject
        table.add_row(_t(subject), *_cells(row), end_section=False)
    return table if result.rows else _t("  nothing timed: no graph or followed function ran")


def _cells(row: Row) -> list[Text]:
    if not row.ran:
        return [_t(row.variant), _t("not run", "dim"), *(_t("-") for _ in range(6)), _t("")]
    return [_t(row.variant), _t(row.calls or "-"), _t(row.host.n if row.host else 0),
            _t(_us(row.gpu, "median_us")), _t(_us(row.gpu, "p95_us")),
            _t(_us(row.host, "median_us")), _t(_us(row.host, "p95_us")), _verdict(row)]


def _us(value: Stat | None, name: str) -> str:
    if value is None:
        return "-"
    return units.format_duration(int(getattr(value, name) * 1000))


def _verdict(row: Row) -> Text:
    verdict = row.verdict
    if verdict is None:
        return _t("-")
    speedup = f" {units.format_speedup(verdict.speedup)}" if verdict.speedup else ""
    if verdict.kinds and len(verdict.kinds) > 1:
        spread = ", ".join(f"{kind} {count}" for kind, count in verdict.kinds.items())
        return _t(f"mixed ({spread}){speedup}", "yellow")
    return _t(f"{verdict.kind}{speedup}", VERDICT_STYLE.get(verdict.kind, ""))


def _verdicts(result: CompareResult) -> RenderableType | None:
    lines = [item(f"{row.variant}:", f"{row.subject}: {row.verdict.summary}")
             for row in result.rows if row.verdict is not None]
    return Group(_heading("Verdicts (the run with the median speedup)"), *lines) if lines \
        else None


def _runs(result: CompareResult) -> RenderableType:
    lines = [item(f"{run.order + 1}.", f"{run.variant} #{run.repeat + 1} "
                  f"{endings.outcome(run.report.trace)}"
                  + (f"; report {run.saved_to}" if run.saved_to else ""))
             for run in result.runs]
    return Group(_heading("Runs, in the order they ran"), *lines)


def _variants(result: CompareResult) -> RenderableType:
    return Group(_heading("Variants"), *(item(f"{v.name}:", v.describe())
                                         for v in result.variants))


def _gates(result: CompareResult) -> RenderableType | None:
    if not result.trips:
        return None
    return Group(_heading("--fail-on"), *(item(f"{trip.condition}:", trip.reason, "red")
                                          for trip in result.trips))
