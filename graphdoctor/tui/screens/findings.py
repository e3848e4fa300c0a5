"""Findings: every problem the diagnosis found, most severe first. The highlighted one is
explained beside the list: what went wrong, the user's lines around the culprit, why, the
fix, and the evidence, each item of which opens on the timeline. / filters the list; the
arrows flow from the list to the explanation and on to the evidence."""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option

from graphdoctor.clean_text import clean
from graphdoctor.diagnose.findings import Finding
from graphdoctor.report.render.common import folded
from graphdoctor.tui.navigation import ShowEvent
from graphdoctor.tui.palette import severity_badge, severity_style
from graphdoctor.tui.rendering import evidence_label, finding_view, labelled
from graphdoctor.tui.report_view import ReportView
from graphdoctor.tui.safe_text import report_text
from graphdoctor.tui.screens.filtered import FilteredScreen
from graphdoctor.tui.screens.help import binding_lines
from graphdoctor.tui.timeline.findings import finding_span
from graphdoctor.tui.widgets.flow import FlowingList, FlowingScroll
from graphdoctor.tui.widgets.table_filter import TableFilter, filter_keys

PATCH_HINT = "patch: d shows it, y copies it (graphdoctor fix REPORT --apply writes it)"
NO_PATCH = ("This finding has no patch: graphdoctor fix writes one for some rules, where the "
            "report's files are on this machine, unchanged")
NO_MATCH = "No finding's line holds what the filter says (esc clears it)."
BADGE_WIDTH = 7  # a finding's severity badge, left of its line
NO_FINDINGS = ("No findings: the diagnosis found nothing in this run that needs changing. "
               "The Summary (1) has the verdicts; the Timeline (3) shows what happened.")


def patch_view(diff: str) -> Text:
    """A unified diff with its added lines green and its removed lines red."""
    text = Text()
    for line in diff.splitlines(keepends=True):
        style = "green" if line.startswith("+") else "red" if line.startswith("-") else ""
        text.append_text(report_text(line, "bold" if line.startswith(("---", "+++", "@@"))
                                     else style))
    return text


def finding_line(finding: Finding, whose: str = "") -> Table:
    """A finding in a list: badge, rule id, and the title, after its ranks when given (a
    multi-rank report's findings each come from one rank's trace, or, alike on several,
    stand for each of theirs: ``ranks 0-2``)."""
    return labelled([finding_cells(finding, whose)], label_width=BADGE_WIDTH)


def finding_cells(finding: Finding, whose: str = "") -> tuple[Text, Text]:
    """A finding's line in a list as (badge, the rest): also the text its filter reads."""
    body = report_text(f"{finding.id} ", "bold")
    if whose:
        body.append(f"{whose}: ", style="bold")
    body.append(clean(finding.title + folded(finding)))
    return report_text(severity_badge(finding.severity), severity_style(finding.severity)), body


class FindingsScreen(FilteredScreen):
    FILTERED = "#findings-list"
    BINDINGS = [
        # A priority binding, so the footer shows it over the lists' own "select" on enter.
        Binding("enter", "show_evidence", "Show on timeline", priority=True),
        Binding("e", "focus_evidence", "Evidence"),
        # d for the diff (f already opens this screen from every other)
        Binding("d", "toggle_patch", "Patch"),
        Binding("y", "copy_patch", "Copy patch", show=False),  # the footer keeps q at 80
        *filter_keys(search_in_footer=False),  # as y
    ]
    showing_patch = False

    @classmethod
    def bar_count(cls, view: ReportView) -> int:
        return len(view.findings)

    @classmethod
    def key_help(cls) -> list[tuple[str, str]]:
        return [("↑ ↓", "choose a finding; past the last, on to its text and evidence"),
                *binding_lines(cls.BINDINGS),
                ("tab", "move between the list and the evidence")]

    def compose(self) -> ComposeResult:
        yield self.mode_bar()
        yield TableFilter()
        with Horizontal(id="findings-body"):
            yield FlowingList(*self._options(range(len(self.view.findings))),
                              id="findings-list")
            with FlowingScroll(id="finding-detail"):
                yield Static(NO_FINDINGS, id="finding-text")
                yield Static("Evidence (enter: show it on the timeline)", id="evidence-title",
                             classes="section-title")
                yield FlowingList(id="evidence")
        yield Footer()

    def _options(self, indices: Iterable[int]) -> list[Option]:
        """The list's lines for the findings at ``indices``, each named by its index."""
        return [Option(labelled([self._cells(index)], label_width=BADGE_WIDTH), id=str(index))
                for index in indices]

    def _cells(self, index: int) -> tuple[Text, Text]:
        finding = self.view.findings[index]
        return finding_cells(finding, self.view.whose(finding, figures=False))

    def refilter(self) -> None:
        """The findings whose line holds the filter's text, the first of them on show."""
        kept = self.row_filter.kept(range(len(self.view.findings)), self._cells)
        listed = self.query_one("#findings-list", OptionList)
        listed.clear_options()
        listed.add_options(self._options(kept))
        listed.highlighted = 0 if kept else None
        if not kept and self.view.findings:
            self.query_one("#finding-text", Static).update(NO_MATCH)
            self.query_one("#evidence", OptionList).clear_options()

    def on_mount(self) -> None:
        has_findings = bool(self.view.findings)
        for selector in ("#findings-list", "#evidence-title", "#evidence"):
            self.query_one(selector).display = has_findings
        if has_findings:
            self.query_one("#findings-list", OptionList).highlighted = 0
            self.query_one("#findings-list").focus()

    def kept_place(self) -> object:
        if self.current is None:
            return None
        finding = self.view.findings[self.current]
        return finding.id, finding.graph, finding.rank

    def return_to(self, place: object) -> None:
        if isinstance(place, tuple):
            index = self.view.finding_index(*place)
            if index is not None:
                self.reveal(index)

    @property
    def current(self) -> int | None:
        """The index (in the report view's list) of the finding on show."""
        option = self.query_one("#findings-list", OptionList).highlighted_option
        return None if option is None else int(option.id or 0)

    def show_finding(self, index: int) -> None:
        finding = self.view.findings[index]
        self.showing_patch = False
        detail = finding_view(self.view, finding)
        if self.view.patch_of(finding):
            detail = Group(detail, Text(f"\n{PATCH_HINT}", style="green"))
        self.query_one("#finding-text", Static).update(detail)
        options = self.query_one("#evidence", OptionList)
        options.clear_options()
        evidence = self.view.evidence(finding)
        options.add_options([Option(report_text(evidence_label(self.view, item, ref)),
                                    id=str(number), disabled=ref is None)
                             for number, (item, ref) in enumerate(evidence)])
        if not evidence:
            options.add_option(Option("no evidence recorded for this finding", disabled=True))
        self.query_one("#finding-detail").scroll_home(animate=False)

    def reveal(self, index: int) -> None:
        """Highlight finding number ``index``; a filter that hides it is cleared."""
        if not 0 <= index < len(self.view.findings):
            return
        findings = self.query_one("#findings-list", OptionList)
        if str(index) not in {option.id for option in findings.options}:
            self.row_filter.action_clear()
            self.refilter()
        findings.highlighted = findings.get_option_index(str(index))
        findings.focus()

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option_list.id == "findings-list":
            self.show_finding(int(event.option.id or 0))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        if event.option_list.id == "findings-list":
            self.action_show_evidence()
        else:
            self._show_evidence(int(event.option.id or 0))

    def action_show_evidence(self) -> None:
        """The highlighted piece of evidence (or else the first that is in the trace) on the
        timeline."""
        if self.current is None:
            return
        chosen = self.query_one("#evidence", OptionList)
        if chosen.has_focus and chosen.highlighted is not None:
            self._show_evidence(chosen.highlighted)
            return
        evidence = self.view.evidence(self.view.findings[self.current])
        number = next((n for n, (_, ref) in enumerate(evidence) if ref is not None), None)
        if number is None:
            self.notify("This finding has no evidence to show on the timeline.", timeout=3)
            return
        self._show_evidence(number)

    def _show_evidence(self, number: int) -> None:
        if self.current is None:
            return
        _, ref = self.view.evidence(self.view.findings[self.current])[number]
        if ref is not None:  # framed with the rest of the finding's evidence on its rank
            frame = finding_span(self.view.problems, self.current, ref.rank)
            self.post_message(ShowEvent(ref, frame))

    def action_toggle_patch(self) -> None:
        """The finding's patch in place of its explanation, and back."""
        if self.current is None:
            return
        finding = self.view.findings[self.current]
        diff = self.view.patch_of(finding)
        if not diff:
            self.notify(NO_PATCH, timeout=4)
            return
        if self.showing_patch:
            self.show_finding(self.current)
            return
        self.showing_patch = True
        self.query_one("#finding-text", Static).update(patch_view(diff))
        self.query_one("#finding-detail").scroll_home(animate=False)

    def action_copy_patch(self) -> None:
        """The patch to the clipboard, through the terminal (OSC 52), where it allows it."""
        diff = self.view.patch_of(self.view.findings[self.current]) \
            if self.current is not None else ""
        if not diff:
            self.notify(NO_PATCH, timeout=4)
            return
        self.app.copy_to_clipboard(diff)
        self.notify("Patch copied (through the terminal: where it allows programs to set "
                    "the clipboard)", timeout=4)

    def action_focus_evidence(self) -> None:
        evidence = self.query_one("#evidence", OptionList)
        evidence.focus()
        if evidence.highlighted is None and evidence.option_count:
            evidence.highlighted = 0
