"""Search (/): findings, graphs, errors, warnings, compile events, phases, kinds of event,
each graph's replays and its kernels by name, and each followed function's calls by its
name, each with the screen that shows it. The index is pure; :class:`ReportSearch` serves it in
Textual's command palette (:class:`SearchPalette`), whose fuzzy matching and keys people
already know. An item's text is the report's, cleaned, and the palette is given it as
content, never as markup. Choosing a hit remembers the search's hits for n and N
(:mod:`graphdoctor.tui.search_hits`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import partial

from textual.await_complete import AwaitComplete
from textual.command import (
    Command,
    CommandList,
    CommandPalette,
    DiscoveryHit,
    Hit,
    Hits,
    Provider,
)
from textual.content import Content
from textual.fuzzy import Matcher
from textual.message import Message

from graphdoctor.clean_text import clean
from graphdoctor.diagnose.findings import SEVERITY_RANK
from graphdoctor.trace.anatomy import short_kernel_name
from graphdoctor.trace.event_kinds import BY_NAME, KINDS
from graphdoctor.trace.model import Trace
from graphdoctor.tui.events import EventRef
from graphdoctor.tui.navigation import ShowEvent, ShowFinding, ShowGraph
from graphdoctor.tui.report_view import ReportView
from graphdoctor.tui.screens.base import ReportScreen
from graphdoctor.tui.search_hits import HitTrail, SearchChosen
from graphdoctor.tui.timeline.node_lane import NODE_LANE
from graphdoctor.units import format_moment

DISCOVERED = 40  # items listed before anything is typed
MAX_PER_KIND = 300  # a run with thousands of compile events needs no more to be found
# Besides each kind's sorts (a sync's kind, a stream op's op...): the pools allocations came from.
POOLS = (BY_NAME["allocs"], "pool", "allocation in pool")
ON_GPU = (NODE_LANE, "stream:")  # a replay shown as its stream ran it, its nodes open


@dataclass(frozen=True)
class SearchItem:
    text: str  # what the query matches
    help: str  # where it leads; the palette reads it as markup, so none of it is the report's
    shows: Callable[[], Message]  # the message, posted to the app, that opens it
    # For an item that stands for a sort of event: each of them, in the order they happened.
    events: Callable[[], list[EventRef]] | None = None
    lanes: tuple[str, ...] = ()  # the lanes to show its events on first (ShowEvent.lanes)


def search_items(view: ReportView) -> list[SearchItem]:
    """Everything searchable in a report, findings first; in a multi-rank report each rank's
    graphs and events, their text starting with the rank ("rank 1 sync item")."""
    per_rank = [(_Rank(rank, rank_view.trace, view.multi_rank)) for rank, rank_view
                in view.rank_views.items()]
    items = [*_findings(view), *(item for rank in per_rank for item in _graphs(rank)),
             *(item for rank in per_rank for item in _events(rank)),
             *(item for rank in per_rank for item in _replays(rank)),
             *(item for rank in per_rank for item in _calls(rank)),
             *(item for rank in per_rank for item in _kinds(rank))]
    return [replace(item, text=clean(item.text)) for item in items]


@dataclass(frozen=True)
class _Rank:
    rank: int
    trace: Trace
    named: bool  # whether its items say which rank they are from

    def text(self, text: str) -> str:
        return f"rank {self.rank} {text}" if self.named else text

    def ref(self, kind: str, index: int) -> EventRef:
        return EventRef(kind, index, self.rank)


def _findings(view: ReportView) -> Iterator[SearchItem]:
    for index, finding in enumerate(view.findings):
        whose = f"{view.whose(finding, figures=False)} " if view.multi_rank else ""
        known = f"{finding.severity} " if finding.severity in SEVERITY_RANK else ""
        yield SearchItem(f"{finding.id} {whose}{finding.name}: {finding.title}",
                         f"{known}finding", partial(ShowFinding, index))


def _graphs(rank: _Rank) -> Iterator[SearchItem]:
    for graph in rank.trace.graphs:
        yield SearchItem(rank.text(f"graph {graph.id} {graph.api} {graph.status} pool "
                                   f"{graph.pool}"), "graph",
                         partial(ShowGraph, (rank.rank, graph.id)))


def _replays(rank: _Rank) -> Iterator[SearchItem]:
    """Each graph's replays, one item that n and N step through ("replay of graph 0", first
    of 1,000), shown on the GPU as its stream ran them, nodes open; and each kernel of its
    nodes by name, leading to the same replays."""
    rows: dict[int, list[int]] = {}
    for row, graph in enumerate(rank.trace.tables["replays"].data["graph"]):
        rows.setdefault(graph, []).append(row)
    graphs = {graph.id: graph for graph in rank.trace.graphs}
    for graph_id, replayed in rows.items():
        graph = graphs.get(graph_id)
        what = f"graph {graph_id}" + (f" ({graph.api})" if graph is not None else "")
        events = partial(_refs, rank, "replays", replayed)
        first = partial(ShowEvent, rank.ref("replays", replayed[0]), lanes=ON_GPU)
        yield SearchItem(rank.text(f"replay of {what}"), f"first of {len(replayed)}", first,
                         events, ON_GPU)
        kernels = graph.anatomy.kernels if graph is not None and graph.anatomy else ()
        for group in kernels[:MAX_PER_KIND]:
            short = short_kernel_name(group.name)
            full = f": {group.name}" if group.name != short else ""
            yield SearchItem(rank.text(f"kernel {short} ×{group.count} in {what}{full}"),
                             f"in each of {len(replayed)} replays", first, events, ON_GPU)


def _calls(rank: _Rank) -> Iterator[SearchItem]:
    """Each followed function's calls by its name, per mode ("decode_step call (eager)")."""
    data = rank.trace.tables["calls"].data
    rows: dict[tuple[int, str], list[int]] = {}
    for row, key in enumerate(zip(data["fn"], data["mode"], strict=True)):
        rows.setdefault(key, []).append(row)
    names = {function.id: function.name for function in rank.trace.functions}
    for (fn, mode), called in list(rows.items())[:MAX_PER_KIND]:
        shows = partial(ShowEvent, rank.ref("calls", called[0]))
        yield SearchItem(rank.text(f"{names.get(fn, f'function {fn}')} call ({mode})"),
                         f"first of {len(called)}", shows, partial(_refs, rank, "calls", called))


def _refs(rank: _Rank, kind: str, rows: list[int]) -> list[EventRef]:
    return [rank.ref(kind, row) for row in rows]


def _events(rank: _Rank) -> Iterator[SearchItem]:
    trace = rank.trace
    for index, record in enumerate(trace.exceptions[:MAX_PER_KIND]):
        for link in record.chain:
            yield _at(rank.text(f"{link.type}: {link.message} {link.cuda_error}"), "exception",
                      record.t, rank.ref("exceptions", index))
    for index, warning in enumerate(trace.warnings[:MAX_PER_KIND]):
        yield _at(rank.text(f"{warning.category}: {warning.message}"), "warning", warning.t,
                  rank.ref("warnings", index))
    for index, event in enumerate(trace.compile_events[:MAX_PER_KIND]):
        yield _at(rank.text(f"compile {event.kind} {event.reason} {event.function}".strip()),
                  "compile event", event.t, rank.ref("compile_events", index))
    for index, span in enumerate(trace.phases[:MAX_PER_KIND]):
        yield _at(rank.text(f"{span.phase} phase"), "phase", span.start, rank.ref("phases", index))
    for index, teardown in enumerate(trace.teardown[:MAX_PER_KIND]):
        if teardown.kind == "begin":
            yield _at(rank.text("destroy_process_group teardown"), "teardown", teardown.t,
                      rank.ref("teardown", index))


def _at(text: str, what: str, t: int, ref: EventRef) -> SearchItem:
    return SearchItem(" ".join(text.split())[:160], f"{what} at {format_moment(t, 1_000)}",
                      partial(ShowEvent, ref))


def _kinds(rank: _Rank) -> Iterator[SearchItem]:
    """The first event of each sort of each kind (sync item, stream op wait_event, call
    eager...), and of each pool allocations came from."""
    sorts = [(kind, kind.sort, kind.label) for kind in KINDS if kind.columnar and kind.sort]
    for kind, field, what in [*sorts, POOLS]:
        values = rank.trace.tables[kind.name].data[field]
        for value in sorted(set(values), key=str):
            first = values.index(value)
            yield SearchItem(rank.text(f"{what} {value}"), f"first of {values.count(value)}",
                             partial(ShowEvent, rank.ref(kind.name, first)),
                             partial(_events_of_sort, rank, kind.name, values, value))


def _events_of_sort(rank: _Rank, kind: str, values: list[object], value: object) -> list[EventRef]:
    return [rank.ref(kind, index) for index, each in enumerate(values) if each == value]


def trail_of(items: Sequence[SearchItem], chosen: int) -> HitTrail:
    """What n and N step through after ``items[chosen]`` was chosen: the events it stands for
    (a sort of event), from the first; else the items listed, from the one chosen."""
    item = items[chosen]
    if item.events is not None:
        refs = item.events()
        return HitTrail(len(refs), lambda number: ShowEvent(refs[number], lanes=item.lanes))
    return HitTrail(len(items), lambda number: items[number].shows(), chosen)


def ranked(matcher: Matcher, items: Sequence[SearchItem]) -> list[tuple[float, SearchItem]]:
    """The items the query matches, with their scores, in the order the palette lists them
    (best first; of equal scores, the first found first: its sort is stable)."""
    scored = [(score, item) for item in items if (score := matcher.match(item.text)) > 0]
    return sorted(scored, key=lambda hit: hit[0], reverse=True)


class ReportSearch(Provider):
    """The report's search index in the command palette."""

    async def startup(self) -> None:
        searched = self.screen  # the screen the search was opened on: each shows the report
        self.items = search_items(searched.view) if isinstance(searched, ReportScreen) else []

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        hits = ranked(matcher, self.items)
        listed = [item for _, item in hits]
        for number, (score, item) in enumerate(hits):
            yield Hit(score, highlighted(matcher, item.text), self._go(listed, number),
                      text=item.text, help=item.help)

    async def discover(self) -> Hits:
        listed = self.items[:DISCOVERED]
        for number, item in enumerate(listed):
            yield DiscoveryHit(Content(item.text), self._go(listed, number), text=item.text,
                               help=item.help)

    def _go(self, listed: Sequence[SearchItem], number: int) -> Callable[[], object]:
        """Open hit ``number`` of those ``listed``, remembering them for n and N."""
        return lambda: self.app.post_message(SearchChosen(trail_of(listed, number)))


def highlighted(matcher: Matcher, text: str) -> Content:
    """``text`` with the letters the query matched highlighted, as ``Matcher.highlight``
    does, but read as plain text: that method reads its text as markup."""
    content = Content(text)
    _, offsets = matcher.fuzzy_search.match(matcher.query, text)
    for offset in offsets:
        if not text[offset].isspace():
            content = content.stylize(matcher.match_style, offset, offset + 1)
    return content


class SearchPalette(CommandPalette):
    """The command palette over :class:`ReportSearch`, closed at most once, and only while
    it is the screen shown.

    The palette closes itself on Enter and on Escape, but it leaves the screen a moment
    later; a second key typed in that moment would close it again, and so pop the screen
    under it (with nothing under that, Textual raises ScreenStackError)."""

    def __init__(self) -> None:
        super().__init__(providers=[ReportSearch],
                         placeholder="Search findings, graphs, errors, events…")
        self._dismissed = False  # not _closing: Textual's message pump uses that name

    def _action_command_list(self, action: str) -> None:
        """Textual's option list turns a page (PageUp, PageDown) by its laid-out lines, which
        a list whose hits have only just arrived does not have yet: it raises KeyError
        (Textual 8's ``OptionList._move_page``). That key is dropped; the next one finds
        the list laid out."""
        try:
            super()._action_command_list(action)
        except KeyError:
            pass

    def dismiss(self, result: None = None) -> AwaitComplete:
        """Close, once, and only from the top of the screens shown: a number key typed
        while the palette opened may have switched to another screen's stack, where
        closing would pop that screen's own (Textual: "Can't pop screen"). Left there, the
        palette is found again on going back, and Escape closes it then."""
        if self._dismissed or self.app.screen is not self:
            return AwaitComplete()  # nothing left to wait for
        self._dismissed = True
        self.app.workers.cancel_node(self)  # the search still gathering hits: not wanted
        return super().dismiss(result)

    def _refresh_command_list(self, command_list: CommandList, commands: list[Command],
                              clear_current: bool) -> None:
        """Hits gathered for a palette being taken down: its list is gone already (Textual
        fills it from its worker, and raised NoMatches there). Dropped."""
        if command_list.is_attached:
            super()._refresh_command_list(command_list, commands, clear_current)
