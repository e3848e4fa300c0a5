"""A :class:`~graphdoctor.report.diff.ReportDiff` as terminal text or markdown.

Both say the same things in the same order: regressions first (what a CI log or a reviewer
needs), then verdicts, findings that appeared or went away, the run and the environment,
and the figures that changed.
"""

from __future__ import annotations

from rich import box
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from graphdoctor import units
from graphdoctor.clean_text import clean
from graphdoctor.diagnose.findings import Verdict
from graphdoctor.facts import locations
from graphdoctor.report.diff import Figure, FindingChange, ReportDiff, VerdictChange
from graphdoctor.report.render import markdown
from graphdoctor.report.render.markdown_escape import escape
from graphdoctor.report.render.terminal import item, printed

MAX_ROWS = 50


def _verdict_cell(verdict: Verdict | None) -> str:
    if verdict is None:
        return "-"
    speedup = verdict.speedup
    return verdict.kind + (f" {units.format_speedup(speedup)}" if speedup is not None else "")


def _change_note(change: VerdictChange) -> str:
    if change.before is None:
        return "new"
    if change.after is None:
        return "gone"
    if change.speedup_change is not None and abs(change.speedup_change) >= 0.005:
        return f"speedup {change.speedup_change:+.0%}"
    return "changed" if change.kind_changed else "same"


def format_figure(figure: Figure, value: float | None) -> str:
    if value is None:
        return "-"
    if figure.unit == "ns":
        return units.format_duration(int(value))
    return f"{value:,.0f}"


def _figure_change(figure: Figure) -> str:
    a, b = figure.before, figure.after
    if a is None or b is None or a == b:
        return "" if a == b else "new" if a is None else "gone"
    return f"{(b - a) / a:+.0%}" if a else f"+{b:g}"


def _changed_figures(diff: ReportDiff) -> list[Figure]:
    return [f for f in diff.figures if f.before != f.after]


def _finding_line(change: FindingChange) -> str:
    f = change.finding
    where = f" at {locations.file_name(f.location.file)}:{f.location.line}" if f.location else ""
    count = f" ×{change.after}" if change.after > 1 else ""
    return clean(f"{f.severity} {f.id} {f.name}{where}: {f.title}{count}")


def render_diff_text(diff: ReportDiff, *, width: int = 100, color: bool = False) -> str:
    return printed(_text_parts(diff), width, color)


def _text_parts(diff: ReportDiff) -> list[RenderableType]:
    title = Table.grid(padding=(0, 1))  # the names wrap under themselves, past the title
    title.add_column(no_wrap=True)
    title.add_column(overflow="fold")
    title.add_row(Text("graphdoctor diff:", style="bold"),
                  Text(f"{clean(diff.before_name)} → {clean(diff.after_name)}"))
    parts: list[RenderableType] = [title]
    if diff.regressions:
        parts.append(Text(f"\nRegressions ({len(diff.regressions)})", style="bold red"))
        parts += [item(f"{r.condition}:", r.reason, "red") for r in diff.regressions]
    else:
        parts.append(Text("\nNo regressions.", style="green"))
    if diff.verdicts:
        parts += [Text("\nVerdicts", style="bold"), _verdict_table(diff)]
    parts.append(Text("\nFindings", style="bold"))
    parts += [item("+", _finding_line(c), "red") for c in diff.appeared[:MAX_ROWS]]
    parts += [item("-", _finding_line(c), "green") for c in diff.gone[:MAX_ROWS]]
    unchanged = len(diff.findings) - len(diff.appeared) - len(diff.gone)
    parts.append(Text(f"  {unchanged} unchanged", style="dim"))
    for label, rows in (("Run", diff.run), ("Environment", diff.environment)):
        if rows:
            parts.append(Text(f"\n{label}", style="bold"))
            parts += [item(clean(f"{name}:"), clean(f"{a} → {b}"), "") for name, a, b in rows]
    figures = _changed_figures(diff)
    if figures:
        parts += [Text("\nFigures that changed", style="bold"), _figure_table(figures)]
    return parts


def _table(*columns: str) -> Table:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=True)
    for column in columns:
        table.add_column(column, overflow="fold")
    return table


def _verdict_table(diff: ReportDiff) -> Table:
    table = _table("subject", "before", "after", "change")
    for change in diff.verdicts[:MAX_ROWS]:
        table.add_row(Text(clean(change.subject)), Text(_verdict_cell(change.before)),
                      Text(_verdict_cell(change.after)), Text(_change_note(change)))
    return table


def _figure_table(figures: list[Figure]) -> Table:
    table = _table("figure", "before", "after", "change")
    for figure in figures[:MAX_ROWS]:
        table.add_row(Text(figure.name), Text(format_figure(figure, figure.before)),
                      Text(format_figure(figure, figure.after)), Text(_figure_change(figure)))
    return table


def render_diff_markdown(diff: ReportDiff) -> str:
    """The diff as markdown: each string of either report through :func:`escape`, cells and
    lines bounded as in the report's own markdown."""
    lines = [f"### graphdoctor diff: {markdown.code(diff.before_name)} → "
             f"{markdown.code(diff.after_name)}", ""]
    if diff.regressions:
        lines += [f"**{len(diff.regressions)} regression"
                  f"{'s' if len(diff.regressions) > 1 else ''}:**", ""]
        lines += [f"- **{_escaped(r.condition)}**: {_escaped(r.reason)}" for r in diff.regressions]
    else:
        lines.append("**No regressions.**")
    if diff.verdicts:
        rows = [[_escaped(c.subject), _escaped(_verdict_cell(c.before)),
                 _escaped(_verdict_cell(c.after)), _escaped(_change_note(c))]
                for c in diff.verdicts[:MAX_ROWS]]
        lines += ["", markdown.table(["Subject", "Before", "After", "Change"], rows)]
    lines += ["", "#### Findings", ""]
    lines += [f"- 🆕 {_markdown_finding_line(c)}" for c in diff.appeared[:MAX_ROWS]]
    lines += [f"- ✅ gone: {_markdown_finding_line(c)}" for c in diff.gone[:MAX_ROWS]]
    unchanged = len(diff.findings) - len(diff.appeared) - len(diff.gone)
    lines.append(f"- {unchanged} unchanged")
    lines += _markdown_details(diff)
    return "\n".join(lines) + "\n"


def _escaped(text: str) -> str:
    """Text from a report for a markdown cell or list item, bounded like a verdict's cell."""
    return escape(text, most=markdown.MAX_VERDICT_CELL)


def _markdown_finding_line(change: FindingChange) -> str:
    return escape(_finding_line(change), most=markdown.MAX_TITLE)


def _markdown_details(diff: ReportDiff) -> list[str]:
    out = []
    changes = [[_escaped(name), _escaped(a), _escaped(b)]
               for name, a, b in (*diff.run, *diff.environment)]
    if changes:
        out += ["", markdown.details("Run and environment",
                                     markdown.table(["", "Before", "After"], changes))]
    figures = _changed_figures(diff)
    if figures:
        rows = [[_escaped(f.name), format_figure(f, f.before), format_figure(f, f.after),
                 _figure_change(f)] for f in figures[:MAX_ROWS]]
        out += ["", markdown.details("Figures that changed",
                                     markdown.table(["Figure", "Before", "After", "Change"], rows))]
    return out
