"""Every colour and glyph the TUI draws content with, in one place.

Only the sixteen ANSI colour names are used, so a 16-colour terminal keeps every
distinction; and each distinction a colour makes is also made by a glyph or a word, for
readers who cannot tell the colours apart (or whose terminal has none).
"""

from __future__ import annotations

from typing import NamedTuple

from graphdoctor.diagnose.model import ERROR, INFO, WARNING
from graphdoctor.trace.event_kinds import EventKind
from graphdoctor.trace.model import CAPTURE, EAGER, OWN, REPLAY, WARMUP


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
    "eager": Mark("█", "blue", 2),
    "warmup": Mark("█", "yellow", 2),
    "record": Mark("█", "magenta", 2),
    "replay": Mark("█", "green", 2),
    "skipped": Mark("█", "red", 2),
}
REPLAY_HOST = Mark("█", "green", 3)
REPLAY_GPU = Mark("█", "green", 2)
CAPTURE_SPAN = Mark("▒", "magenta", 1)
FAILED_CAPTURE_SPAN = Mark("▒", "bright_red", 1)
EXCEPTION = Mark("X", "bold bright_red", 6)
WARNING_MARK = Mark("!", "yellow", 5)
INPUT_EVENT = Mark("F", "bold bright_red", 5)
ALLOC_ON_STREAM = Mark("·", "bright_black", 0)

# torch.distributed: a captured collective is a C in the capture's colour (not a shade, which
# on this lane means how long a call took); one that never returned, and a
# destroy_process_group() that never did, run on to the end of the run as ┅.
COLLECTIVE = Mark("█", "cyan", 3)
CAPTURED_COLLECTIVE = Mark("C", "bold magenta", 4)
NEVER_RETURNED = Mark("┅", "bold bright_red", 5)
TEARDOWN = Mark("═", "yellow", 2)
OTHER_EVENT = Mark("•", "white", 1)

STREAM_OP_MARKS = {
    "create": Mark("+", "cyan", 4),
    "enter": Mark(">", "cyan", 4),
    "exit": Mark("<", "cyan", 4),
    "wait_stream": Mark("w", "bright_cyan", 5),
    "wait_event": Mark("w", "bright_cyan", 5),
    "event_wait": Mark("w", "bright_cyan", 5),
    "record": Mark("r", "bright_black", 3),
}

SYNC_MARKS = {
    CAPTURE: Mark("X", "bold bright_red", 4),
    REPLAY: Mark("!", "yellow", 3),
    WARMUP: Mark("•", "yellow", 2),
    EAGER: Mark("•", "white", 1),
}

COMPILE_MARKS = {
    "graph_break": Mark("B", "bold bright_red", 6),
    "cudagraph_skip": Mark("S", "bold bright_red", 6),
    "recompile": Mark("R", "yellow", 5),
    "rerecord": Mark("R", "yellow", 5),
    "dynamic_shape_warning": Mark("D", "yellow", 5),
    "cudagraph_record": Mark("r", "magenta", 4),
    "tree_recording": Mark("r", "magenta", 4),
    "partition": Mark("p", "cyan", 3),
    "tree_run": Mark("·", "bright_black", 1),
    "compile": Mark("█", "blue", 2),
}

MEMORY_STYLE = "cyan"
GPU_UTIL_STYLE = "green"
SELECTED_STYLE = "bold bright_white on blue"

SEVERITY_STYLES = {ERROR: "bold bright_red", WARNING: "bold yellow", INFO: "cyan"}
SEVERITY_BADGES = {ERROR: "✗ error", WARNING: "▲ warn", INFO: "• info"}

VERDICT_MARKS = {
    "faster": Mark("✓", "bold green", 0),
    "neutral": Mark("≈", "yellow", 0),
    "slower": Mark("▼", "bright_red", 0),
    "failed": Mark("✗", "bold bright_red", 0),
    "skipped": Mark("∅", "yellow", 0),
    "rerecorded": Mark("↻", "yellow", 0),
    "unsafe": Mark("!", "bold bright_red", 0),
    "unmeasured": Mark("?", "bright_black", 0),
}
GRAPH_STATUS_STYLES = {"captured": "green", "failed": "bold bright_red", "capturing": "yellow"}


def severity_style(severity: str) -> str:
    return SEVERITY_STYLES.get(severity, "white")


def severity_badge(severity: str) -> str:
    return SEVERITY_BADGES.get(severity, severity)


def verdict_mark(kind: str) -> Mark:
    return VERDICT_MARKS.get(kind, Mark("•", "white", 0))


def kind_mark(kind: EventKind) -> Mark:
    """How a kind of event with no mark of its own above is drawn: as its registry says."""
    return Mark(kind.glyph, kind.colour, 1)

