"""The run's facts and how it ended, from the records that carry them as free-form objects
(``hello``, ``meta``, ``devices``, ``dist``, ``end``, ``run_end``): each value read as the
recorder writes it, a number as a number and text as text. A spool from elsewhere may hold
anything there; a value of another type is read as the field's default, so the trace is one
every report reader can take (:mod:`graphdoctor.trace.spool.typed`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from graphdoctor.trace import cuda_state, phases
from graphdoctor.trace.builder import Builder
from graphdoctor.trace.endings import (
    EXITED,
    INTERRUPTED,
    SIGNALLED,
    TIMED_OUT,
    UNKNOWN,
    signal_name,
)
from graphdoctor.trace.model import NONE, Device, Meta, Note, RunStatus, Trace
from graphdoctor.trace.names import PATH_TARGET, RECORDING_STOPPED
from graphdoctor.trace.spool.typed import number, text, texts


def meta(b: Builder) -> Meta:
    m = b.meta
    return Meta(
        tool_version=text(m, "tool_version"), argv=texts(m, "argv"),
        target=text(m, "target"), target_kind=text(m, "target_kind", PATH_TARGET),
        cwd=text(m, "cwd"), started_at=text(m, "started_at"), mode=text(m, "mode", "default"),
        python=text(m, "python"), torch=text(m, "torch"), cuda=text(m, "cuda"),
        platform=text(m, "platform"), hostname=text(m, "hostname"),
        cuda_available=cuda_state.cuda_available(b), devices=_devices(m),
        not_recorded=tuple(_notes(b)), env=_env(m), rank=number(m, "rank", NONE),
        world_size=number(m, "world_size", NONE), backend=text(m, "backend"),
        sources=tuple(b.sources.values()), clock_unix_ns=number(m, "clock_unix_ns", 0),
        pid=number(m, "pid", NONE), parent_pid=number(m, "parent_pid", NONE),
        command=texts(m, "command"),
    )


def _devices(m: Mapping[str, Any]) -> tuple[Device, ...]:
    found = m.get("devices")
    listed = [d for d in found if isinstance(d, dict)] if isinstance(found, list) else []
    return tuple(Device(number(d, "index", i), text(d, "name"), number(d, "memory_total", 0),
                        text(d, "compute_capability"), text(d, "driver"))
                 for i, d in enumerate(listed))


def _env(m: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    found = m.get("env")
    pairs = found if isinstance(found, list) else []
    return tuple((p[0], p[1]) for p in pairs
                 if isinstance(p, list) and len(p) == 2 and all(type(v) is str for v in p))


def _notes(b: Builder) -> list[Note]:
    notes = list(b.notes)
    unread = cuda_state.unread_note(b)
    if unread is not None:
        notes.append(unread)
    if b.untimed:
        were = "was" if b.untimed == 1 else "were"
        notes.append(Note("GPU time of some replays and calls",
                          f"{b.untimed} {were} not timed (inside a capture, with the GPU too far "
                          "behind to hold more CUDA events, or, seen through CUPTI, with no "
                          "stream known to time them on)"))
    if b.bad_records:
        notes.append(Note("some records", f"{b.bad_records} spool records could not be read"))
    if b.unknown_tags:
        notes.append(Note("some records", "records this graphdoctor does not declare (a newer "
                          f"recorder's?): {', '.join(sorted(b.unknown_tags))}"))
    return notes


def status(b: Builder, trace: Trace) -> RunStatus:
    run_end = b.run_end or {}
    ended = b.end or {}
    reason = text(run_end, "reason", UNKNOWN)
    finished = b.end is not None
    # a rank's own exit code when it finished; the launcher's (or the signal's) otherwise
    exit_code = _code(ended, _code(run_end)) if reason == EXITED else _code(run_end)
    last_phase = phases.PhaseIndex(trace.phases).phase_at(b.last_t)
    stopped = text(run_end, "spool_error") or next(
        (n.why for n in b.notes if n.what == RECORDING_STOPPED), "")
    return RunStatus(
        complete=finished and reason == EXITED, reason=reason, exit_code=exit_code,
        signal=_code(run_end, key="signal"), last_phase=last_phase,
        message=_message(reason, run_end, finished, stopped),
        wall_ns=number(run_end, "wall_ns", 0),
        stacks_at_end=text(run_end, "stacks") if not finished or reason != EXITED else "",
        recording_stopped=stopped,
    )


def _code(data: Mapping[str, Any], otherwise: int | None = None,
          key: str = "exit_code") -> int | None:
    """An exit code or a signal number, where the record holds one."""
    value = data.get(key)
    return value if type(value) is int else otherwise


def _message(reason: str, run_end: Mapping[str, Any], finished: bool, stopped: str) -> str:
    if reason == TIMED_OUT:
        timeout = run_end.get("timeout_s")
        return (f"the script ran past the {timeout if type(timeout) in (int, float) else None}"
                " s time-out and was killed")
    if reason == SIGNALLED:
        return f"the script was killed by {signal_name(_code(run_end, key='signal'))}"
    if reason == INTERRUPTED:
        return (f"graphdoctor was sent {signal_name(_code(run_end, key='signal'))} and passed "
                "it on to the script")
    if reason == UNKNOWN:
        return "the recording has no end record: graphdoctor itself was interrupted"
    if not finished and stopped:
        return (f"the recording stops early: its spool could not be written to the end "
                f"({stopped}); the script ran on without it")
    if not finished:
        return "the script ended without letting graphdoctor finish (os._exit or a fatal error)"
    return ""
