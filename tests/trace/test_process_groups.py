"""A process group's label in a trace, and the ranks read back from it."""

from __future__ import annotations

from graphdoctor.trace.process_groups import DEFAULT_GROUP, group_label, group_members


def test_a_label_carries_the_groups_name_and_ranks_and_gives_them_back() -> None:
    label = group_label("2", [2, 3])
    assert label == "2[2, 3]"
    assert group_members(label, range(4)) == {2, 3}
    assert group_members(group_label("", [0, 2]), range(4)) == {0, 2}


def test_the_default_group_is_the_world_and_a_bare_name_says_nothing() -> None:
    assert group_members(DEFAULT_GROUP, [0, 1, 2]) == {0, 1, 2}
    assert group_members("140235", range(4)) is None
    assert group_label("pg", []) == "pg"


def test_ranks_outside_the_job_given_are_not_members() -> None:
    assert group_members("7[1, 5]", range(4)) == {1}
