"""The fold's partition-list conversions (:class:`rebalance_lab.replay.timeline.PartitionLists`) and the counts
inferred from the shared lists."""

from __future__ import annotations

from rebalance_lab.replay.counts import Inferred
from rebalance_lab.replay.timeline import PartitionLists, member_of


def test_a_list_met_again_is_converted_once_into_the_same_tuple() -> None:
    lists = PartitionLists()
    shared = [{"topic": "t", "partition": 1}, {"topic": "u", "partition": 0}]
    first = lists.of(shared)
    assert first == (("t", 1), ("u", 0))
    assert lists.of(shared) is first
    assert lists.known(shared) is first


def test_an_equal_list_of_its_own_converts_to_an_equal_tuple() -> None:
    lists = PartitionLists()
    assert lists.of([{"topic": "t", "partition": 1}]) == lists.of([{"topic": "t", "partition": 1}])
    assert lists.known([{"topic": "t", "partition": 1}]) is None
    assert lists.known(None) is None


def test_a_members_owned_list_is_shared_only_once_converted() -> None:
    lists = PartitionLists()
    assignment = [{"topic": "t", "partition": 2}]
    before = member_of({"member_id": "a", "owned": assignment, "assignment": [{"topic": "t", "partition": 3}]}, lists)
    assert before.owned_cache is None and before.owned == (("t", 2),)  # read lazily
    member_of({"member_id": "a", "assignment": assignment}, lists)
    after = member_of({"member_id": "a", "owned": assignment, "assignment": assignment}, lists)
    assert after.owned_cache is after.assignment == (("t", 2),)
    assert member_of({"member_id": "b", "assignment": assignment}).assignment == (("t", 2),)  # no shared cache


def test_inferred_counts_are_the_same_whether_a_list_comes_again_shared_or_as_an_equal_copy() -> None:
    shared = (("t", 4), ("u", 0))
    inferred = Inferred()
    inferred.add(shared)
    inferred.add(shared)
    inferred.add((("t", 4), ("u", 0)))
    inferred.add((("t", 1), ("u", 2)))
    assert inferred.seen == {"t": 5, "u": 3}
