"""Every diagnosis rule, listed explicitly, one per module.

Ids group the rules: GD1xx explain a failed capture, GD2xx a graph that gives no speedup,
GD3xx a graph that is unsafe or wastes memory, GD4xx what goes wrong between the ranks of a
distributed run, and where a run that hung was waiting.
"""

from __future__ import annotations

import difflib

from graphdoctor.diagnose.findings import Rule
from graphdoctor.diagnose.rules import (
    gd101_sync_in_capture,
    gd102_pageable_copy_in_capture,
    gd103_unjoined_side_stream,
    gd104_default_stream_capture,
    gd105_other_thread_during_capture,
    gd106_rng_in_capture,
    gd107_other_device_in_capture,
    gd108_exception_in_capture,
    gd109_empty_graph,
    gd110_library_init_in_capture,
    gd111_capture_failed,
    gd112_torch_internal_error,
    gd201_gpu_bound,
    gd202_too_little_work_per_graph,
    gd203_sync_between_replays,
    gd204_input_copies_per_replay,
    gd205_rerecord_per_shape,
    gd206_graph_break,
    gd207_cudagraph_skipped,
    gd208_recompiles,
    gd209_static_input_moved,
    gd210_host_node_in_graph,
    gd211_serial_tiny_kernels,
    gd212_replay_outlier,
    gd301_output_overwritten,
    gd302_freed_captured_input,
    gd303_private_pool_per_graph,
    gd304_memory_growth_across_replays,
    gd305_frozen_host_value,
    gd306_frozen_host_state,
    gd307_output_kept_across_replays,
    gd308_copy_outside_capture,
    gd309_shared_pool_concurrent_replay,
    gd401_collective_in_capture,
    gd402_ranks_diverged,
    gd403_rank_capture_failed,
    gd404_distributed_hang,
    gd405_teardown_hang,
    gd406_process_hang,
    gd407_left_running,
)

ALL_RULES: tuple[Rule, ...] = (
    gd101_sync_in_capture.RULE,
    gd102_pageable_copy_in_capture.RULE,
    gd103_unjoined_side_stream.RULE,
    gd104_default_stream_capture.RULE,
    gd308_copy_outside_capture.RULE,
    gd105_other_thread_during_capture.RULE,
    gd106_rng_in_capture.RULE,
    gd107_other_device_in_capture.RULE,
    gd108_exception_in_capture.RULE,
    gd109_empty_graph.RULE,
    gd110_library_init_in_capture.RULE,
    gd112_torch_internal_error.RULE,
    gd111_capture_failed.RULE,
    gd201_gpu_bound.RULE,
    gd202_too_little_work_per_graph.RULE,
    gd210_host_node_in_graph.RULE,
    gd211_serial_tiny_kernels.RULE,
    gd203_sync_between_replays.RULE,
    gd212_replay_outlier.RULE,
    gd204_input_copies_per_replay.RULE,
    gd205_rerecord_per_shape.RULE,
    gd206_graph_break.RULE,
    gd208_recompiles.RULE,
    gd209_static_input_moved.RULE,
    gd207_cudagraph_skipped.RULE,
    gd301_output_overwritten.RULE,
    gd307_output_kept_across_replays.RULE,
    gd302_freed_captured_input.RULE,
    gd309_shared_pool_concurrent_replay.RULE,
    gd303_private_pool_per_graph.RULE,
    gd304_memory_growth_across_replays.RULE,
    gd305_frozen_host_value.RULE,
    gd306_frozen_host_state.RULE,
    gd401_collective_in_capture.RULE,
    gd402_ranks_diverged.RULE,
    gd403_rank_capture_failed.RULE,
    gd404_distributed_hang.RULE,
    gd405_teardown_hang.RULE,
    gd406_process_hang.RULE,
    gd407_left_running.RULE,
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
