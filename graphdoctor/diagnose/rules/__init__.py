"""Every diagnosis rule, listed explicitly, one per module.

Ids group the rules: GD1xx explain a failed capture, GD2xx a graph that gives no speedup,
GD3xx a graph that is unsafe or wastes memory, GD4xx what goes wrong between the ranks of a
distributed run, and where a run that hung was waiting.
"""

from __future__ import annotations

import difflib

from graphdoctor.diagnose.findings import Rule
from graphdoctor.diagnose.rules import (
    capture_failed,
    collective_hang,
    collective_in_capture,
    cudagraph_skipped,
    default_stream,
    empty_graph,
    exception_in_capture,
    freed_input,
    frozen_host_state,
    frozen_value,
    gpu_bound,
    graph_break,
    host_node,
    input_copies,
    kept_output,
    left_running,
    library_init,
    little_work,
    memory_growth,
    other_device,
    other_thread,
    output_overwritten,
    pageable_copy,
    pool_per_graph,
    process_hang,
    rank_capture_failed,
    ranks_diverged,
    recompiles,
    replay_outlier,
    rerecord_per_shape,
    rng_in_capture,
    serial_tiny_kernels,
    shared_pool_race,
    static_input_moved,
    sync_between_replays,
    sync_in_capture,
    teardown_hang,
    torch_bug,
    uncaptured_copy,
    unjoined_stream,
)

ALL_RULES: tuple[Rule, ...] = (
    sync_in_capture.RULE,
    pageable_copy.RULE,
    unjoined_stream.RULE,
    default_stream.RULE,
    uncaptured_copy.RULE,
    other_thread.RULE,
    rng_in_capture.RULE,
    other_device.RULE,
    exception_in_capture.RULE,
    empty_graph.RULE,
    library_init.RULE,
    torch_bug.RULE,
    capture_failed.RULE,
    gpu_bound.RULE,
    little_work.RULE,
    host_node.RULE,
    serial_tiny_kernels.RULE,
    sync_between_replays.RULE,
    replay_outlier.RULE,
    input_copies.RULE,
    rerecord_per_shape.RULE,
    graph_break.RULE,
    recompiles.RULE,
    static_input_moved.RULE,
    cudagraph_skipped.RULE,
    output_overwritten.RULE,
    kept_output.RULE,
    freed_input.RULE,
    shared_pool_race.RULE,
    pool_per_graph.RULE,
    memory_growth.RULE,
    frozen_value.RULE,
    frozen_host_state.RULE,
    collective_in_capture.RULE,
    ranks_diverged.RULE,
    rank_capture_failed.RULE,
    collective_hang.RULE,
    teardown_hang.RULE,
    process_hang.RULE,
    left_running.RULE,
)


def rule_named(name: str) -> Rule | None:
    """A rule by its kebab-case name or its id (GD101)."""
    wanted = name.strip().lower()
    return next((r for r in ALL_RULES if wanted in (r.name, r.id.lower())), None)


def nearest_rules(name: str, most: int = 3) -> list[str]:
    """The rule ids or names closest to ``name`` (a typo, a rule that does not exist)."""
    wanted = name.strip()
    ids = difflib.get_close_matches(wanted.upper(), [r.id for r in ALL_RULES], most, 0.5)
    names = difflib.get_close_matches(wanted.lower(), [r.name for r in ALL_RULES], most)
    return (names + ids)[:most]


def no_such_rule(name: str) -> str:
    """What to say of a rule name or id no rule has: the nearest ones, and where the list
    is."""
    close = nearest_rules(name)
    meant = f" (did you mean {', '.join(close)}?)" if close else ""
    return f"no rule named {name!r}{meant}; graphdoctor rules lists them"
