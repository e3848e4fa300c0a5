"""Graphs captured at one line, read as one.

A loop that captures a graph per batch size or sequence length makes dozens of graphs from
one line. A graph's site is the API that captured it and its user line; where GROUP_FROM or
more graphs (of one rank) share a site, they read as one: the verdicts' rows
(:mod:`graphdoctor.report.verdict_groups`), the Graphs screen's rows
(:mod:`graphdoctor.tui.graph_groups`) and the timeline's lanes
(:mod:`graphdoctor.tui.timeline.graph_groups`) all group by :func:`site` and
:func:`grouped`.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

from graphdoctor.facts import locations
from graphdoctor.trace.model import Graph, Trace

GROUP_FROM = 3  # graphs of one site from which they read as one

Site = tuple[str, str]  # a graph's API and the line that captured it
K = TypeVar("K", bound=Hashable)
T = TypeVar("T")


def site(trace: Trace, graph: Graph) -> Site:
    """Where a graph comes from: its API and its user line."""
    return graph.api, locations.where(trace, graph.stack)


def sites(trace: Trace) -> dict[int, Site]:
    """Where each graph of ``trace`` comes from, by graph id."""
    return {graph.id: site(trace, graph) for graph in trace.graphs}


def grouped(items: Sequence[T], keys: Sequence[K | None]) -> list[tuple[K | None, list[T]]]:
    """``items`` in their order, those of one key (GROUP_FROM or more of them) as one entry
    ``(key, members)`` in the place of the first; every other item alone, ``(None, [item])``.
    An item whose key is None is never grouped."""
    members: dict[K, list[T]] = {}
    for key, item in zip(keys, items, strict=True):
        if key is not None:
            members.setdefault(key, []).append(item)
    out: list[tuple[K | None, list[T]]] = []
    placed: set[K] = set()
    for key, item in zip(keys, items, strict=True):
        if key is None or len(members[key]) < GROUP_FROM:
            out.append((None, [item]))
        elif key not in placed:
            placed.add(key)
            out.append((key, members[key]))
    return out
