"""Worked examples of the KIP-848 server assignors; every expected value is kafka-group-coordinator 4.4.0's
answer to the same input (taken from the Java oracle, tests/java ServerAssign)."""

from __future__ import annotations

import uuid

import pytest

from rebalance_lab.coordinator.consumer.assignors import (
    ASSIGNOR_NAMES,
    AssignorError,
    MemberSubscription,
    PartitionSet,
    SubscriptionType,
    assign,
)
from tests.unit.consumer_assignors.support import member, run, topic_id, topics


def test_uniform_is_the_default_and_range_the_other_assignor() -> None:
    assert ASSIGNOR_NAMES == ("uniform", "range")


def test_range_gives_each_member_a_contiguous_range_of_every_topic_the_spec_rat_example() -> None:
    image = topics(foo=3, bar=3)
    members = [member("A", ["foo", "bar"], image), member("B", ["foo", "bar"], image)]
    assert run("range", members, image) == {"A": {"foo": {0, 1}, "bar": {0, 1}}, "B": {"foo": {2}, "bar": {2}}}


def test_range_puts_static_members_first_by_instance_id_then_the_others_by_member_id() -> None:
    image = topics(t=5)
    members = [member("a", ["t"], image), member("b", ["t"], image, instance_id="z"),
               member("c", ["t"], image, instance_id="y")]
    assert run("range", members, image) == {"c": {"t": {0, 1}}, "b": {"t": {2, 3}}, "a": {"t": {4}}}


def test_range_counts_only_each_topics_subscribers_in_a_heterogeneous_group() -> None:
    image = topics(t1=6, t2=4)
    members = [member("A", ["t1", "t2"], image), member("B", ["t1"], image), member("C", ["t2"], image),
               member("D", [], image)]
    result = assign("range", members, SubscriptionType.HETEROGENEOUS, image)
    assert result["D"] == {}  # every member appears; one subscribed to nothing gets nothing
    assert run("range", members, image) == {
        "A": {"t1": {0, 1, 2}, "t2": {0, 1}}, "B": {"t1": {3, 4, 5}}, "C": {"t2": {2, 3}}
    }


def test_uniform_4_4_lets_a_member_that_needs_no_extra_partition_give_its_extra_slot_away() -> None:
    """The spec's 4.0 snapshot gave A (first in member order) the extra slot and moved a partition from C to
    A; 4.4.0 keeps A at two because enough members remain to take the one extra slot, and nothing moves."""
    image = topics(t=7)
    members = [member("A", ["t"], image, {"t": [0, 1]}), member("B", ["t"], image, {"t": [2, 3]}),
               member("C", ["t"], image, {"t": [4, 5, 6]})]
    assert run("uniform", members, image) == {"A": {"t": {0, 1}}, "B": {"t": {2, 3}}, "C": {"t": {4, 5, 6}}}


def test_uniform_homogeneous_deals_never_assigned_partitions_before_revoked_ones() -> None:
    image = topics(t=8)
    members = [member("A", ["t"], image, {"t": [0, 1, 2, 3, 4, 5]}), member("B", ["t"], image),
               member("C", ["t"], image)]
    assert run("uniform", members, image) == {"A": {"t": {0, 1, 2}}, "B": {"t": {6, 7}}, "C": {"t": {3, 4, 5}}}


def test_uniform_homogeneous_keeps_the_partitions_first_in_java_hash_set_order_not_the_lowest() -> None:
    """A's 20 partitions sit in a HashSet of 32 buckets: 0 and 32 share bucket 0, so 32 comes before 7."""
    image = topics(t=40)
    a = [0, 16, 32, 1, 17, 33, 2, 18, 34, 3, 19, 35, 4, 20, 36, 5, 21, 37, 6, 22]
    b = [*range(7, 16), *range(23, 32), 38, 39]
    members = [member("A", ["t"], image, {"t": a}), member("B", ["t"], image, {"t": b}), member("C", ["t"], image)]
    result = assign("uniform", members, SubscriptionType.HOMOGENEOUS, image)
    t = topic_id(0)
    assert result["A"][t] == PartitionSet([0, 32, 1, 33, 2, 34, 3, 35, 4, 36, 5, 37, 6, 16])
    assert result["B"][t] == {38, 7, 39, 8, 9, 10, 11, 12, 13, 14, 15, 23, 24}
    assert result["C"][t] == {*range(17, 23), *range(25, 32)}


def test_uniform_results_carry_the_record_order_kafka_writes() -> None:
    """A's set grows from 16 to 32 buckets: 32 stays behind 0 in bucket 0, 16 moves to bucket 16."""
    image = topics(t=40)
    members = [member("A", ["t"], image, {"t": [0, 16, 32, 1]}), member("B", ["t"], image)]
    result = assign("uniform", members, SubscriptionType.HOMOGENEOUS, image)
    a, b = result["A"][topic_id(0)], result["B"][topic_id(0)]
    assert isinstance(a, PartitionSet) and isinstance(b, PartitionSet)
    assert a.order == (0, 32, 1, *range(2, 19))
    assert b.order == (*range(33, 40), *range(19, 32))


def test_uniform_heterogeneous_spreads_each_topic_over_its_subscribers() -> None:
    image = topics(t1=6, t2=4)
    members = [member("A", ["t1", "t2"], image), member("B", ["t1"], image), member("C", ["t2"], image)]
    assert run("uniform", members, image) == {"A": {"t1": {0, 2, 4}}, "B": {"t1": {1, 3, 5}}, "C": {"t2": {0, 1, 2, 3}}}


def test_uniform_heterogeneous_moves_partitions_away_from_a_member_that_held_everything() -> None:
    image = topics(t1=6, t2=4)
    members = [member("A", ["t1", "t2"], image, {"t1": [0, 1, 2, 3, 4, 5], "t2": [0, 1, 2, 3]}),
               member("B", ["t1"], image), member("C", ["t2"], image)]
    assert run("uniform", members, image) == {
        "A": {"t1": {0, 5}, "t2": {0}}, "B": {"t1": {1, 2, 3, 4}}, "C": {"t2": {1, 2, 3}}
    }


def test_a_subscribed_name_without_a_topic_is_dropped_but_still_makes_the_group_heterogeneous() -> None:
    image = topics(t=2)
    members = [member("A", ["t"], image), member("B", ["t", "missing"], image)]
    assert run("uniform", members, image) == {"A": {"t": {0}}, "B": {"t": {1}}}


def test_uniform_fails_like_kafka_on_a_topic_id_the_metadata_lacks() -> None:
    image = topics(t=2)
    ghost = uuid.UUID(int=(2 << 64) | 3)
    lost = MemberSubscription("A", None, None, frozenset({topic_id(0), ghost}), {}, ("t",))
    with pytest.raises(AssignorError) as failure:
        assign("uniform", [lost], SubscriptionType.HOMOGENEOUS, image)
    assert str(failure.value) == (
        "Members are subscribed to topic AAAAAAAAAAIAAAAAAAAAAw which doesn't exist in the topic metadata."
    )


def test_range_fails_like_kafka_on_a_topic_id_the_metadata_lacks() -> None:
    lost = MemberSubscription("A", None, None, frozenset({uuid.UUID(int=9)}), {}, ())
    with pytest.raises(AssignorError, match=r"^Member is subscribed to a non-existent topic$"):
        assign("range", [lost], SubscriptionType.HETEROGENEOUS, topics(t=2))


def test_members_subscribed_to_nothing_get_nothing() -> None:
    image = topics(t1=6)
    members = [member("A", [], image), member("B", [], image)]
    assert assign("uniform", members, SubscriptionType.HOMOGENEOUS, image) == {}
    assert assign("range", members, SubscriptionType.HOMOGENEOUS, image) == {"A": {}, "B": {}}


def test_an_empty_group_gets_an_empty_assignment() -> None:
    for name in ASSIGNOR_NAMES:
        assert assign(name, [], SubscriptionType.HOMOGENEOUS, topics(t=3)) == {}


def test_an_unknown_assignor_name_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown server assignor"):
        assign("sticky", [], SubscriptionType.HOMOGENEOUS, {})
