"""Which kinds of event a picture of the run draws in its own way, and which it draws from
the registry alone.

The Chrome trace export (:mod:`.chrome_trace`) and the viewer's timeline
(:mod:`graphdoctor.tui.timeline.build`) each give the kinds named here lanes, slices or
marks of their own; every other kind of :data:`~graphdoctor.trace.event_kinds.KINDS` gets a
plain lane made from its registry entry, so a kind added to the recorder shows in both
without a change to either. Declared once, so the two pictures never disagree about which
kinds they draw.
"""

from __future__ import annotations

from graphdoctor.trace.event_kinds import KINDS, EventKind

DRAWN_APART = frozenset({"replays", "calls", "allocs", "syncs", "stream_ops", "collectives",
                         "memory", "gpu_samples", "exceptions", "compile_events", "warnings",
                         "input_events", "teardown", "kernels"})


def drawn_from_the_registry() -> list[EventKind]:
    """The kinds no picture draws in its own way, in the registry's order."""
    return [kind for kind in KINDS if kind.name not in DRAWN_APART]
