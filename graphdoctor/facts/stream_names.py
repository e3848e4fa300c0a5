"""One name per CUDA stream, the same in the findings, the timeline and the event details:
"default" for stream 0, then s1, s2... in the order the run first used them, with the
stream's handle in hex where a text needs to tell it apart (``s1 (0x21eeb790)``)."""

from __future__ import annotations

from graphdoctor.trace.event_kinds import NONE
from graphdoctor.trace.model import Trace

DEFAULT_STREAM = "default"


def stream_names(trace: Trace) -> dict[int, str]:
    """Short names for CUDA streams: "default" for stream 0, then s1, s2... by first use."""
    first_use: dict[int, int] = {}
    for name in ("stream_ops", "replays", "allocs", "kernels"):
        data = trace.tables[name].data
        for stream in set(data["stream"]):
            at = data["t"][data["stream"].index(stream)]
            first_use[stream] = min(first_use.get(stream, at), at)
    for graph in trace.graphs:
        first_use[graph.stream] = min(first_use.get(graph.stream, graph.capture_start),
                                      graph.capture_start)
    first_use.pop(NONE, None)
    ordered = sorted((s for s in first_use if s != 0), key=lambda s: (first_use[s], s))
    names = {0: DEFAULT_STREAM} if 0 in first_use else {}
    names.update({stream: f"s{number}" for number, stream in enumerate(ordered, 1)})
    return names


def stream_label(names: dict[int, str], stream: int) -> str:
    """``s1 (0x21eeb790)``; the bare handle for a stream the run never used; — for none."""
    if stream == NONE:
        return "—"
    name = names.get(stream)
    return f"{name} ({stream:#x})" if name else f"{stream:#x}"
