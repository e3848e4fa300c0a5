"""Search (/): findings, graphs, errors, warnings, compile events, phases and kinds of event,
each with the screen that shows it. The index is pure; :class:`ReportSearch` serves it in
Textual's command palette, whose fuzzy matching and keys people already know."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

from textual.command import DiscoveryHit, Hit, Hits, Provider

from graphdoctor.report.document import Report
from graphdoctor.tui.events import EventRef
from graphdoctor.tui.report_view import ReportView
from graphdoctor.tui.units import format_moment

MAX_PER_KIND = 300  # a run with thousands of compile events needs no more to be found
KINDS_OF_EVENT = (("syncs", "kind", "sync"), ("stream_ops", "op", "stream op"),
                  ("calls", "mode", "call"), ("allocs", "pool", "allocation in pool"))


@dataclass(frozen=True)
class SearchItem:
    text: str  # what the query matches
    help: str  # where it leads
    mode: str  # the screen that shows it
    target: Any  # what that screen is given to show


def search_items(view: ReportView) -> list[SearchItem]:
    """Everything searchable in a report, findings first."""
    report = view.report
    return [*_findings(view), *_graphs(report), *_events(report), *_kinds(report)]


def _findings(view: ReportView) -> Iterator[SearchItem]:
    for index, finding in enumerate(view.findings):
        yield SearchItem(f"{finding.id} {finding.name}: {finding.title}",
                         f"{finding.severity} finding", "findings", index)


def _graphs(report: Report) -> Iterator[SearchItem]:
    for graph in report.trace.graphs:
        yield SearchItem(f"graph {graph.id} {graph.api} {graph.status} pool {graph.pool}",
                         "graph", "graphs", graph.id)


def _events(report: Report) -> Iterator[SearchItem]:
    trace = report.trace
    for index, record in enumerate(trace.exceptions[:MAX_PER_KIND]):
        for link in record.chain:
            yield _at(f"{link.type}: {link.message} {link.cuda_error}", "exception", record.t,
                      EventRef("exceptions", index))
    for index, warning in enumerate(trace.warnings[:MAX_PER_KIND]):
        yield _at(f"{warning.category}: {warning.message}", "warning", warning.t,
                  EventRef("warnings", index))
    for index, event in enumerate(trace.compile_events[:MAX_PER_KIND]):
        yield _at(f"compile {event.kind} {event.reason} {event.function}".strip(),
                  "compile event", event.t, EventRef("compile_events", index))
    for index, span in enumerate(trace.phases[:MAX_PER_KIND]):
        yield _at(f"{span.phase} phase", "phase", span.start, EventRef("phases", index))


def _at(text: str, what: str, t: int, ref: EventRef) -> SearchItem:
    return SearchItem(" ".join(text.split())[:160], f"{what} at {format_moment(t, 1_000)}",
                      "timeline", ref)


def _kinds(report: Report) -> Iterator[SearchItem]:
    """The first event of each kind of sync, stream op, call and pool."""
    for table, column, what in KINDS_OF_EVENT:
        values = report.trace.tables[table].data[column]
        for value in sorted(set(values), key=str):
            first = values.index(value)
            yield SearchItem(f"{what} {value}", f"first of {values.count(value)}", "timeline",
                             EventRef(table, first))


class ReportSearch(Provider):
    """The report's search index in the command palette."""

    async def startup(self) -> None:
        self.items = search_items(self.app.view)  # type: ignore[attr-defined]

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for item in self.items:
            score = matcher.match(item.text)
            if score > 0:
                yield Hit(score, matcher.highlight(item.text), self._go(item), help=item.help)

    async def discover(self) -> Hits:
        for item in self.items[:40]:
            yield DiscoveryHit(item.text, self._go(item), help=item.help)

    def _go(self, item: SearchItem) -> partial[None]:
        return partial(self.app.go_to, item.mode, item.target)  # type: ignore[attr-defined]
