"""NVTX ranges for each phase, so Nsight Systems shows captures, replays and timed calls.

Uses the ``nvtx`` package's domain API (cheap when no tool is attached); a no-op without it.
"""

from __future__ import annotations

from typing import Any

_COLORS = {"capture": "red", "replay": "green", "eager": "blue", "warmup": "yellow"}
_state: dict[str, Any] = {"domain": None, "replay_attrs": {}}


def enable() -> bool:
    try:
        import nvtx
    except ImportError:
        return False
    _state["domain"] = nvtx.get_domain("graphdoctor")
    return True


def disable() -> None:
    _state["domain"] = None


def push(message: str, phase: str) -> None:
    domain = _state["domain"]
    if domain is not None:
        domain.push_range(domain.get_event_attributes(message=message, color=_COLORS[phase]))


def push_replay(graph: int) -> None:
    domain = _state["domain"]
    if domain is None:
        return
    attrs = _state["replay_attrs"].get(graph)
    if attrs is None:
        attrs = domain.get_event_attributes(message=f"replay graph {graph}", color="green")
        _state["replay_attrs"][graph] = attrs
    domain.push_range(attrs)


def pop() -> None:
    domain = _state["domain"]
    if domain is not None:
        domain.pop_range()
