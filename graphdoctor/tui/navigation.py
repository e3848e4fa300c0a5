"""How one screen asks for another: messages that a screen or widget posts and that bubble
up to the app, which opens the screen that shows what they name. A screen never needs to
know how the app holds its screens, only what it wants shown."""

from __future__ import annotations

from textual.message import Message

from graphdoctor.tui.events import EventRef
from graphdoctor.tui.report_view import GraphKey


class GoToScreen(Message):
    """Open the screen called ``name`` (one of the app's ``SCREENS``) as it was left."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name


class ShowFinding(Message):
    """Open the Findings screen on the finding at ``index`` in the report view's list."""

    def __init__(self, index: int) -> None:
        super().__init__()
        self.index = index


class ShowGraph(Message):
    """Open the Graphs screen on the graph ``key``: (rank, graph id)."""

    def __init__(self, key: GraphKey) -> None:
        super().__init__()
        self.key = key


class ShowEvent(Message):
    """Open the Timeline with the event ``ref`` selected and in view: a finding's evidence, a
    graph's capture, an allocation, a search hit. ``frame``, when given, is a stretch of the
    run ([start, end] in ns) to show whole around it: all of a finding's evidence, say.
    ``lanes``, when given, names the lanes (by key, ``nodes:``) to show it on where one
    does, framed as drawn there: a replay on the GPU, its nodes open."""

    def __init__(self, ref: EventRef, frame: tuple[int, int] | None = None,
                 lanes: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.ref = ref
        self.frame = frame
        self.lanes = lanes  # kinds of lane to show it on first (``nodes:``: a replay on the GPU)
