"""How a trace names a process group: its own name and its ranks (``2[2, 3]``), so that the
ranks of a job agree on it and a reader knows who is in it; ``default`` for the world.

The recorder writes the label (:mod:`graphdoctor.record.host.distributed`); the rules that
compare ranks read the members back, so a rank is held to a group's collectives only when
it is in the group (rank 0 issues none on the pair {2, 3}, and that is no divergence).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

DEFAULT_GROUP = "default"
# Calls between two ranks, not the whole group: a send pairs with its peer's recv, so a
# group's ranks are not expected to issue the same ones in the same order.
POINT_TO_POINT = frozenset({"send", "recv", "isend", "irecv", "batch_isend_irecv"})
UNNAMED_GROUP = "group"
_MEMBERS = re.compile(r"\[([0-9]+(?:, [0-9]+)*)\]$")


def group_label(name: str, ranks: Sequence[int]) -> str:
    """``2[2, 3]``: the group's own name (or "group") and its ranks; the name alone where
    its ranks are not known."""
    return f"{name or UNNAMED_GROUP}{list(ranks)}" if ranks else name


def group_members(label: str, world: Collection[int]) -> set[int] | None:
    """The ranks of ``world`` in the group a label names: all of them for the default group,
    those in its label's list, or None where the label does not say."""
    if label == DEFAULT_GROUP:
        return set(world)
    found = _MEMBERS.search(label)
    if found is None:
        return None
    return {int(rank) for rank in found.group(1).split(", ")} & set(world)
