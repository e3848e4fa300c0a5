"""Turn torch.compile's log records into compile events.

The recorder keeps the records raw; the wording differs between PyTorch releases, so it is
read here, where a new wording needs a new pattern and no new recording. Each parser takes
(logger name, message) and returns the fields of a :class:`CompileEvent`, or None.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from graphdoctor.trace.frames import frames_in_text
from graphdoctor.trace.names import (
    CUDAGRAPH_RECORD,
    CUDAGRAPH_SKIP,
    DYNAMIC_SHAPE_WARNING,
    GRAPH_BREAK,
    PARTITION,
    RECOMPILE,
    RERECORD,
    TREE_RECORDING,
    TREE_RUN,
)
from graphdoctor.trace.torch_logs import guards, rerecords

Parsed = dict[str, Any]
RECOMPILE_DETAIL = 8000  # characters of torch's reasons kept with a recompile

_COMPILE_ID = re.compile(r"^\[(\d+/\d+)\]\s*")
_SKIP = re.compile(
    r"(?:skipping cudagraphs? due to |disabling cudagraphs due to )"
    r"(?:(?:skipping cudagraphs due to |disabling cudagraphs due to ))*(?P<reason>.*)", re.S)
_DYNAMIC = re.compile(r"We have observed (\d+) distinct sizes")
_RECORD_KEY = re.compile(
    r"Recording cudagraph tree for (?:symint key (?P<key>.+)|graph without symints)", re.I)
_TREE_RECORDING = re.compile(r"Recording function=(?P<fn>[^,\s]+)")
_RERECORD = re.compile(
    r"Re-recording function=(?P<fn>[^,\s]+)(?:, mode=\w+)?, reason=(?P<reason>.*)", re.S)
_TREE_WARMUP = re.compile(r"Running (?P<kind>warmup|eager) function=(?P<fn>\S+)")
_BREAK_AT = re.compile(r"Graph break in user code at (?P<file>.+?):(?P<line>\d+)")
_RECOMPILE = re.compile(r"Recompiling function (?P<fn>\S+) in (?P<file>.+?):(?P<line>\d+)")
_PARTITIONS = re.compile(r"Created (\d+) graph partitions?: (\d+) cudagraphable, (\d+) non")
_OP_REASON = re.compile(r"reason=(?P<reason>[^,]+)")


def parse(logger: str, message: str) -> Parsed | None:
    """The compile event a log record stands for, or None for records of no interest."""
    compile_id = ""
    match = _COMPILE_ID.match(message)
    if match:
        compile_id, message = match.group(1), message[match.end():]
    for wants, parser in _PARSERS:
        if wants in logger:
            parsed = parser(message)
            if parsed is not None:
                parsed.setdefault("compile_id", compile_id)
                return parsed
    return None


def _skip(message: str) -> Parsed | None:
    match = _SKIP.search(message)
    if match:
        # the line torch names as the cause comes from the message's own stack ("Found from"
        # in every release so far; a bare traceback is read too); without one, assembly
        # keeps the stack the log line was written from
        reason, _, found = match.group("reason").partition("Found from")
        reason, bare, traceback = reason.partition('File "')
        frames = frames_in_text(found or bare + traceback)
        return {"kind": CUDAGRAPH_SKIP, "reason": _one_line(reason).rstrip(" .:"),
                "frames": frames, "detail": message.strip()}
    dynamic = _DYNAMIC.search(message)
    if dynamic:
        return {"kind": DYNAMIC_SHAPE_WARNING, "key": dynamic.group(1),
                "reason": f"{dynamic.group(1)} distinct input sizes recorded",
                "detail": message.strip()}
    return None


def _tree(message: str) -> Parsed | None:
    for pattern, kind in ((_RECORD_KEY, CUDAGRAPH_RECORD), (_RERECORD, RERECORD),
                          (_TREE_RECORDING, TREE_RECORDING), (_TREE_WARMUP, TREE_RUN)):
        match = pattern.search(message)
        if match:
            groups = match.groupdict()
            parsed: Parsed = {
                "kind": kind, "key": (groups.get("key") or "").strip(),
                "function": groups.get("fn") or "",
                "reason": _one_line(groups.get("reason") or groups.get("kind") or ""),
                "detail": message.strip()[:4000]}
            moved = rerecords.moved_inputs(message) if kind == RERECORD else []
            if moved and moved[0].frames:  # where the graph first uses the input that moved
                parsed["frames"] = list(moved[0].frames)
            return parsed
    return _skip(message)


def _graph_break(message: str) -> Parsed | None:
    at = _BREAK_AT.search(message)
    reason_text = message.split("Graph Break Reason:", 1)[-1].split("User code traceback:")[0]
    lines = [ln.strip() for ln in reason_text.splitlines() if ln.strip()]
    reason = next((ln for ln in lines if ln.startswith("Unsupported")), lines[0] if lines else "")
    frames = frames_in_text(message.split("User code traceback:", 1)[-1]) if at else []
    if at and not frames:
        frames = [(at.group("file"), int(at.group("line")), "?")]
    if not at and not reason:
        return None
    return {"kind": GRAPH_BREAK, "reason": reason.rstrip(":"), "frames": frames,
            "detail": message.strip()[:4000]}


def _recompile(message: str) -> Parsed | None:
    match = _RECOMPILE.search(message)
    if not match:
        return None
    return recompile(match.group("fn"), match.group("file"), int(match.group("line")),
                     guards.reasons_in_log(message))


def recompile(function: str, file: str, line: int, reasons: list[str]) -> Parsed:
    """The recompile of ``function`` (defined at file:line) for torch's reasons: the guard
    of its latest compile that failed as the reason, the user's name for what it guards as
    the key, every reason as the detail, and the user's lines it points at."""
    failure = guards.primary([guards.read_failure(r) for r in reasons])
    if failure is None:
        failure = guards.GuardFailure("")
    return {"kind": RECOMPILE, "function": function, "reason": failure.guard,
            "key": failure.name, "detail": "\n".join(reasons)[:RECOMPILE_DETAIL],
            "frames": guards.sites(failure, file, line, function)}


def _partition(message: str) -> Parsed | None:
    match = _PARTITIONS.search(message)
    if match:
        total, good, bad = match.groups()
        reasons = sorted({m.group("reason").strip() for m in _OP_REASON.finditer(message)})
        return {"kind": PARTITION, "key": f"{good}/{total}",
                "reason": f"{bad} of {total} partitions not cudagraphable"
                          + (f" ({', '.join(reasons)})" if reasons else ""),
                "detail": message.strip()[:4000]}
    return None


def _one_line(text: str) -> str:
    return " ".join(text.split())[:500]


_PARSERS: tuple[tuple[str, Callable[[str], Parsed | None]], ...] = (
    ("cudagraph_utils", _skip),
    ("compile_fx", _skip),
    ("cudagraph_trees", _tree),
    ("scheduler", _partition),
    ("graph_breaks", _graph_break),
    ("recompiles", _recompile),
)
