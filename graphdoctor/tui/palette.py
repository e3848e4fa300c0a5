"""Every colour and glyph the TUI draws content with, in one place.

Only the sixteen ANSI colour names are used, so a 16-colour terminal keeps every
distinction; and each distinction a colour makes is also made by a glyph or a word, for
readers who cannot tell the colours apart (or whose terminal has none). On a lane, one
glyph means one thing (the phase bars' initials aside, which sit in their own colour).

Textual turns ANSI names into RGB through a terminal theme. Its default (Monokai) gives
red, magenta, bright red and bright magenta one colour, so a failed capture looked like a
capture; :data:`ANSI_THEME` gives each name its own, each close enough to the standard
sixteen that a 16-colour terminal gets the same name back.
"""

from __future__ import annotations

from typing import NamedTuple

from rich.terminal_theme import TerminalTheme

from graphdoctor.diagnose.findings import (
    ERROR,
    FAILED,
    FASTER,
    INFO,
    NEUTRAL,
    RERECORDED,
    SKIPPED,
    SLOWER,
    UNMEASURED,
    UNSAFE,
    WARNING,
)
from graphdoctor.trace.event_kinds import EventKind
from graphdoctor.trace.model import CAPTURE, EAGER, OWN, REPLAY, WARMUP
from graphdoctor.trace.names import (
    CAPTURE_FAILED,
    CAPTURED,
    COMPILE,
    CUDAGRAPH_RECORD,
    CUDAGRAPH_SKIP,
    DYNAMIC_SHAPE_WARNING,
    EAGER_CALL,
    GRAPH_BREAK,
    PARTITION,
    RECOMPILE,
    RECORDING_CALL,
    REPLAYING_CALL,
    RERECORD,
    SKIPPED_CALL,
    STILL_CAPTURING,
    TREE_RECORDING,
    TREE_RUN,
    WARMUP_CALL,
)


class Mark(NamedTuple):
    """How one kind of event looks on a lane; the higher priority wins a shared cell."""

    glyph: str
    style: str
    priority: int


PHASE_MARKS = {
    EAGER: Mark("─", "bright_black", 0),
    WARMUP: Mark(" ", "black on yellow", 1),
    REPLAY: Mark(" ", "black on green", 2),
    CAPTURE: Mark(" ", "black on magenta", 3),
    OWN: Mark(" ", "black on white", 4),
}

CALL_MARKS = {
    EAGER_CALL: Mark("█", "blue", 2),
    WARMUP_CALL: Mark("█", "yellow", 2),
    RECORDING_CALL: Mark("█", "magenta", 2),
    REPLAYING_CALL: Mark("█", "green", 2),
    SKIPPED_CALL: Mark("█", "red", 2),
}
REPLAY_HOST = Mark("█", "green", 3)
REPLAY_GPU = Mark("█", "green", 2)
CAPTURE_SPAN = Mark("▒", "magenta", 1)
FAILED_CAPTURE_SPAN = Mark("╳", "bold bright_red", 1)
EXCEPTION = Mark("✗", "bold bright_red", 6)
WARNING_MARK = Mark("!", "yellow", 5)
INPUT_EVENT = Mark("F", "bold bright_red", 5)
ALLOC_ON_STREAM = Mark("·", "bright_black", 0)

# torch.distributed: a captured collective is a ▣ in the capture's colour (not a shade, which
# on this lane means how long a call took); one that never returned, and a
# destroy_process_group() that never did, run on to the end of the run as ┅.
COLLECTIVE = Mark("█", "cyan", 3)
CAPTURED_COLLECTIVE = Mark("▣", "bold magenta", 4)
NEVER_RETURNED = Mark("┅", "bold bright_red", 5)
TEARDOWN = Mark("═", "yellow", 2)
OTHER_EVENT = Mark("•", "white", 1)

# A replay opened into its graph's nodes (timeline.node_lane): kernels as bars, neighbours
# in two blues, NCCL's in cyan; a span's first column is ▐ where another ends just before it.
NODE_KERNEL = Mark("█", "blue", 2)
NODE_KERNEL_ALTERNATE = "bright_blue"
NODE_COLLECTIVE = Mark("█", "cyan", 2)
NODE_COPY = Mark("▚", "yellow", 2)
NODE_HOST = Mark("⌂", "bold bright_red", 3)
NODE_OTHER = Mark("◇", "white", 1)
NODE_UNKNOWN = Mark("?", "bright_black", 1)  # a replay of a graph whose nodes were not kept
NODE_MARKS = {"kernel": NODE_KERNEL, "memcpy": NODE_COPY, "memset": NODE_COPY,
              "host": NODE_HOST}
BOUNDARY = "▐"

# A fork or join inside a capture, drawn from the stream waited on (┬ or ┴ on its lane) to
# the stream that waits; a fork never joined back is dashed and red.
STREAM_LINK = Mark("│", "cyan", 0)
UNJOINED_LINK = Mark("┊", "bold bright_red", 0)
LINK_ENDS = ("┬", "┴")  # the waited-on stream above the waiting one, or below it

STREAM_OP_MARKS = {
    "create": Mark("+", "cyan", 4),
    "enter": Mark(">", "cyan", 4),
    "exit": Mark("<", "cyan", 4),
    "wait_stream": Mark("w", "bright_cyan", 5),
    "wait_event": Mark("w", "bright_cyan", 5),
    "event_wait": Mark("w", "bright_cyan", 5),
    "record": Mark("r", "bright_black", 3),
}

# A sync is an s; one inside a capture is the culprit of the capture's failure, an X.
SYNC_MARKS = {
    CAPTURE: Mark("X", "bold bright_red", 4),
    REPLAY: Mark("s", "bold yellow", 3),
    WARMUP: Mark("s", "yellow", 2),
    EAGER: Mark("s", "white", 1),
}

COMPILE_MARKS = {
    GRAPH_BREAK: Mark("B", "bold bright_red", 6),
    CUDAGRAPH_SKIP: Mark("S", "bold bright_red", 6),
    RECOMPILE: Mark("R", "yellow", 5),
    RERECORD: Mark("↻", "yellow", 5),
    DYNAMIC_SHAPE_WARNING: Mark("D", "yellow", 5),
    CUDAGRAPH_RECORD: Mark("G", "magenta", 4),
    TREE_RECORDING: Mark("G", "magenta", 4),
    PARTITION: Mark("p", "cyan", 3),
    TREE_RUN: Mark("›", "bright_black", 1),
    COMPILE: Mark("█", "blue", 2),
}

# A finding's evidence, on the lane of findings: one glyph per severity, so that they
# differ without colour too.
FINDING_MARKS = {
    ERROR: Mark("▲", "bold bright_red", 7),
    WARNING: Mark("△", "bold yellow", 6),
    INFO: Mark("∘", "cyan", 5),
}
# Every event from the selected event's source line, on every lane.
SAME_LINE_STYLE = "underline"

MEMORY_STYLE = "cyan"
GPU_UTIL_STYLE = "green"
SELECTED_STYLE = "bold bright_white on blue"

SEVERITY_STYLES = {ERROR: "bold bright_red", WARNING: "bold yellow", INFO: "cyan"}
SEVERITY_BADGES = {ERROR: "✗ error", WARNING: "▲ warn", INFO: "• info"}

VERDICT_MARKS = {
    FASTER: Mark("✓", "bold green", 0),
    NEUTRAL: Mark("≈", "yellow", 0),
    SLOWER: Mark("▼", "bright_red", 0),
    FAILED: Mark("✗", "bold bright_red", 0),
    SKIPPED: Mark("∅", "yellow", 0),
    RERECORDED: Mark("↻", "yellow", 0),
    UNSAFE: Mark("!", "bold bright_red", 0),
    UNMEASURED: Mark("?", "bright_black", 0),
}
GRAPH_STATUS_STYLES = {CAPTURED: "green", CAPTURE_FAILED: "bold bright_red",
                       STILL_CAPTURING: "yellow"}


def severity_style(severity: str) -> str:
    return SEVERITY_STYLES.get(severity, "white")


def severity_badge(severity: str) -> str:
    return SEVERITY_BADGES.get(severity, severity)


def verdict_mark(kind: str) -> Mark:
    return VERDICT_MARKS.get(kind, Mark("•", "white", 0))


# The sixteen ANSI colour names, the only ones content is drawn in.
ANSI_COLOURS = frozenset(f"{bright}{name}" for bright in ("", "bright_") for name in (
    "black", "red", "green", "yellow", "blue", "magenta", "cyan", "white"))
# How each kind of event (graphdoctor.trace.event_kinds) is drawn where it has no mark of
# its own above; a kind not named here is drawn with its label's initial, a capital, in
# white (a test checks that no glyph then means two things on the lanes).
KIND_MARKS = {
    "replays": Mark("█", "green", 1), "calls": Mark("█", "blue", 1),
    "allocs": Mark("·", "bright_black", 1), "syncs": Mark("•", "yellow", 1),
    "stream_ops": Mark("w", "cyan", 1), "collectives": Mark("█", "cyan", 1),
    "memory": Mark("▁", "blue", 1), "gpu_samples": Mark("▁", "green", 1),
    "instantiations": Mark("I", "magenta", 1), "gc_pauses": Mark("g", "bright_blue", 1),
    "exceptions": Mark("✗", "bright_red", 1), "compile_events": Mark("C", "yellow", 1),
    "guarded_tensors": Mark("T", "yellow", 1), "warnings": Mark("!", "yellow", 1),
    "input_events": Mark("F", "bright_red", 1), "teardown": Mark("═", "yellow", 1),
    # a number a graph holds frozen while the script changed it: unsafe, in its colour
    "frozen_values": Mark("≡", "bright_red", 1),
    # where a graph sharing its pool was replayed, and on which stream
    "replay_sites": Mark("↯", "green", 1),
    # an output kept across replays, a copy a capture left out: unsafe too
    "kept_outputs": Mark("k", "bright_red", 1), "uncaptured_calls": Mark("u", "bright_red", 1),
    "call_inputs": Mark("i", "red", 1),  # the inputs of a call torch failed on
    # on its stream's lane, beside the graph launches (green) and their nodes (blue)
    "kernels": Mark("█", "bright_cyan", 1),
}
OTHER_KIND_STYLE = "white"


def kind_mark(kind: EventKind) -> Mark:
    """How a kind of event with no mark of its own above is drawn."""
    return KIND_MARKS.get(kind.name) or Mark(kind.label[:1].upper(), OTHER_KIND_STYLE, 1)



ANSI_THEME = TerminalTheme(
    (12, 12, 12), (217, 217, 217),
    [(0, 0, 0), (198, 39, 39), (9, 183, 85), (205, 171, 10), (22, 68, 188), (188, 63, 188),
     (17, 168, 205), (211, 211, 211)],
    [(102, 102, 102), (241, 76, 76), (45, 218, 128), (245, 245, 67), (59, 142, 234),
     (214, 112, 214), (54, 205, 230), (255, 255, 255)],
)
"""The sixteen ANSI colours as RGB, each its own, for Textual's conversion (see above)."""
