"""Rich renderables for the panes that explain things: an event's details, a finding, source
lines, errors. Rich only, no Textual: the widgets show these, and tests read their text.
Text from the report enters them through :func:`report_text` or :func:`clean`: shown,
never taken as markup or sent to the terminal as a control sequence.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from graphdoctor.clean_text import clean
from graphdoctor.diagnose.findings import Evidence, Finding
from graphdoctor.facts.locations import frame_text
from graphdoctor.facts.queries import culprit_frame, culprit_of
from graphdoctor.report.disk_lines import FROM_DISK, NOT_KEPT
from graphdoctor.report.render.common import folded
from graphdoctor.trace.model import NONE, PYTHON, USER, ErrorLink, Frame
from graphdoctor.tui.capture_story import StoryLine
from graphdoctor.tui.events import EventDetails, EventRef, SourceLine, marked
from graphdoctor.tui.palette import severity_badge, severity_style
from graphdoctor.tui.report_view import ReportView
from graphdoctor.tui.safe_text import report_text
from graphdoctor.units import format_moment

INLINE_FIELD = 32  # longer values get a line of their own
MAX_FRAMES = 12


def hanging(text: Text, marks: Sequence[str] = ()) -> RenderableType:
    """``text`` line by line, each line's continuation indented under its start: under its
    text after its leading spaces, or after one of ``marks`` it begins with (a severity
    badge), where a plain wrap would start again at the left edge."""
    rows: list[RenderableType] = []
    for line in text.split("\n", allow_blank=True):
        plain = line.plain
        indent = len(plain) - len(plain.lstrip(" "))
        mark = next((m for m in marks if plain.startswith(m)), "")
        indent = max(indent, len(mark) + 1 if mark else 0)
        if not indent or indent >= len(plain):
            rows.append(line)
            continue
        grid = Table.grid()
        grid.add_column(width=indent, no_wrap=True)
        grid.add_column(ratio=1)
        grid.add_row(line[:indent], line[indent:])
        rows.append(grid)
    return Group(*rows)


def cut_at_word(text: Text, width: int, breaks: Sequence[str] = (" ",)) -> Text:
    """``text`` on one line of ``width`` cells: whole, or cut before the last of ``breaks``
    (a space; or the start of a clause, `` · ``, so that a figure keeps its unit) that
    leaves it room for ``…``, which says it goes on."""
    if text.cell_len <= width:
        return text
    room = max(width - 1, 0)
    cut = max(text.plain.rfind(mark, 0, room + len(mark)) for mark in breaks)
    if cut <= 0:  # no clause ends in the room: after a word, else wherever the room ends
        cut = text.plain.rfind(" ", 0, room + 1)
    shown = text[:cut if cut > 0 else room]
    shown.rstrip()
    shown.append("…", style="dim")
    return shown


def labelled(rows: Sequence[tuple[str | Text, RenderableType]], label_width: int = 9) -> Table:
    """Rows of label and value, the value wrapping under itself rather than under the label.
    A value given as a string is shown as plain text (a table would read it as markup)."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(width=label_width, no_wrap=True)
    grid.add_column(ratio=1)
    for label, value in rows:
        grid.add_row(report_text(label, "dim") if isinstance(label, str) else label,
                     report_text(value) if isinstance(value, str) else value)
    return grid


def source_block(lines: Sequence[SourceLine], where: str = "",
                 note: str = "") -> RenderableType:
    """Numbered source lines, the target marked with ▶ and shown in reverse video; long
    lines wrap under the code, not under the numbers. ``note`` says where they came from
    (or, with no lines, why there are none)."""
    title = [report_text(where, "bold")] if where else []
    if not lines:
        return Group(*title, Text(f"({note or NOT_KEPT})", style="dim"))
    width = len(str(max(line.number for line in lines))) + 1
    rows = [(Text(f"{'▶' if line.is_target else ' '}{line.number:>{width - 1}}",
                  style="bold" if line.is_target else "dim"),
             report_text(line.text, "bold reverse" if line.is_target else ""))
            for line in lines]
    notes = [Text(f"({note})", style="dim")] if note else []
    return Group(*title, labelled(rows, label_width=width), *notes)


def source_view(view: ReportView, file: str, line: int, where: str = "") -> RenderableType:
    """The lines around ``file``:``line``, as the report kept them or read from disk (a
    file the report vouches for, read on first need), saying which or why there are none."""
    excerpt = view.sources.excerpt(file, line)
    return source_block(marked(excerpt.lines, line), where, excerpt.note)


def story_code(line: StoryLine, indent: int) -> Text:
    """The text of a capture step's user line, on a line of its own under where it is,
    saying so when it was read from disk; empty where there is none."""
    if not line.code:
        return Text()
    text = report_text(f"\n{' ' * indent}{line.code}")
    if line.code_from_disk:
        text.append(f"  ({FROM_DISK})", style="dim")
    return text


def stack_text(frames: Sequence[Frame], cwd: str) -> Text:
    """A stack outermost first, as Python prints it; the user's frames in bold, the innermost
    of them (where a fix goes) marked with ▶. A frame too long for the pane ends in … rather
    than wrapping under the markers."""
    text = Text(no_wrap=True, overflow="ellipsis")
    culprit = culprit_of(frames)
    shown = list(frames)
    while len(shown) > 1 and shown[0].kind == PYTHON:  # runpy and friends, before the script
        shown.pop(0)
    shown = shown[-MAX_FRAMES:]
    if len(frames) > len(shown):
        text.append(f"  … {len(frames) - len(shown)} outer frames\n", style="dim")
    for frame in shown:
        marker = "▶ " if frame is culprit else "  "
        style = "bold" if frame.kind == USER else "dim"
        text.append(f"{marker}{clean(frame_text(frame, cwd))}\n", style=style)
    text.rstrip()
    return text


def culprit_source(view: ReportView, frames: Sequence[Frame]) -> RenderableType | None:
    """The user's lines around the stack's user frame, if it has one."""
    culprit = culprit_of(frames)
    if culprit is None:
        return None
    return source_view(view, culprit.file, culprit.line)


def details_view(view: ReportView, details: EventDetails) -> RenderableType:
    """The details pane for one event: title, fields, stack and the user's source line."""
    fields = list(details.fields)
    rank = details.ref.rank
    if details.start is not None and not any(name == "phase" for name, _ in fields):
        fields.insert(1, ("phase", view.phase_at(details.start, rank)))
    parts: list[RenderableType] = [report_text(details.title, "bold"), fields_text(fields)]
    if details.stack:
        parts += [Text("stack (innermost last)", style="underline"),
                  stack_text(details.stack, view.trace_of(rank).meta.cwd)]
        source = culprit_source(view, details.stack)
        parts += [source] if source is not None else []
    else:
        parts.append(Text("no stack was recorded for this event", style="dim"))
    return Group(*parts)


def fields_text(fields: Sequence[tuple[str, str]]) -> Text:
    """Short fields on one line, separated by dots; long ones on lines of their own."""
    text = Text()
    inline = [(n, v) for n, v in fields if len(v) <= INLINE_FIELD]
    for index, (name, value) in enumerate(inline):
        text.append(f"{clean(name)} ", style="dim")
        text.append(clean(value))
        text.append(" · " if index < len(inline) - 1 else "\n", style="dim")
    for name, value in fields:
        if len(value) > INLINE_FIELD:
            text.append(f"{clean(name)}: ", style="dim")
            text.append(f"{clean(value)}\n")
    text.rstrip()
    return text


def finding_view(view: ReportView, finding: Finding) -> RenderableType:
    """A finding: what, where in the user's code, why, and the fix."""
    header = Text()
    header.append(f"{clean(severity_badge(finding.severity))} ",
                  style=severity_style(finding.severity))
    header.append(clean(f"{finding.id} {finding.name}"), style="bold")
    on_rank = f" · {view.whose(finding)}" if view.multi_rank else ""
    header.append(f"  ({clean(finding.category)}{on_rank})\n", style="dim")
    header.append(clean(finding.title + folded(finding)), style="bold")
    fix = Text("Fix: ", style="bold green")
    fix.append(clean(finding.fix))
    return Group(header, *figures_view(view, finding), Text(), location_view(view, finding),
                 Text(), report_text(finding.explanation), Text(), fix)


MOST_FIGURES = 8  # ranks whose own figures a finding alike on many lists


def figures_view(view: ReportView, finding: Finding) -> list[RenderableType]:
    """Each rank's own title, where a finding alike on several ranks has figures that
    differ by rank; [] where they do not."""
    members = view.members(finding)
    if len({m.title + folded(m) for m in members}) < 2:
        return []
    text = Text("each rank's own:", style="dim")
    for member in members[:MOST_FIGURES]:
        text.append(f"\nrank {member.rank}: ", style="dim")
        text.append(clean(member.title + folded(member)))
    if len(members) > MOST_FIGURES:
        text.append(f"\n… and {len(members) - MOST_FIGURES} more ranks", style="dim")
    return [Text(), text]


def location_view(view: ReportView, finding: Finding) -> RenderableType:
    location = finding.location
    if location is None:
        return Text("No line of your code is named by this finding.", style="dim")
    where = frame_text(Frame(location.file, location.line, location.function or "?"),
                       view.trace_of(finding.rank).meta.cwd)
    return source_view(view, location.file, location.line, where)


def evidence_label(view: ReportView, evidence: Evidence, ref: EventRef | None) -> str:
    """One line for an evidence item: what and when, or why it cannot be shown."""
    if ref is None:
        whose = f"rank {view.rank_key(evidence.rank)}'s" if view.multi_rank else "this"
        return f"{evidence.kind}[{evidence.index}] (not in {whose} trace)"
    details = view.describe(ref)
    when = f" at {format_moment(details.start, 1_000)}" if details.start is not None else ""
    note = f" — {evidence.note}" if evidence.note else ""
    return f"{details.title}{when}{note}"


def error_text(view: ReportView, link: ErrorLink, rank: int = NONE) -> Text:
    """An exception of a chain (of ``rank``'s trace), and the user's line it was raised from."""
    code = f" [{link.cuda_error}]" if link.cuda_error else ""
    text = report_text(f"{link.type}: {link.message}{code}", "bright_red")
    trace = view.trace_of(rank)
    frame = culprit_frame(trace, link.stack)
    if frame is not None:
        text.append(f"\nat {clean(frame_text(frame, trace.meta.cwd))}", style="bold")
    return text
