"""The assignors' shortcuts for the replay's many small assignments give what the plain definitions give."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rebalance_lab.clients.assignors import ASSIGNORS
from rebalance_lab.clients.assignors.common import SHARED_PARTITIONS, shared_partitions, topic_partitions
from rebalance_lab.clients.assignors.java_hashmap import string_hash, to_int32
from rebalance_lab.clients.assignors.types import (
    ClusterView,
    GroupSubscription,
    PartitionMeta,
    Subscription,
    TopicPartition,
)


def _java_hash_by_units(text: str) -> int:
    """``String.hashCode`` written as Java's loop over UTF-16 code units."""
    raw = text.encode("utf-16-be")
    h = 0
    for i in range(0, len(raw), 2):
        h = (31 * h + int.from_bytes(raw[i : i + 2], "big")) & 0xFFFFFFFF
    return to_int32(h)


@given(st.text(max_size=300))
def test_string_hash_equals_the_loop_over_utf16_units(text: str) -> None:
    assert string_hash(text) == _java_hash_by_units(text)


def test_string_hash_of_a_long_member_id_equals_the_loop() -> None:
    member = "consumer-svc-004-group-05986-1-e7c4a4a3-fde0-41f0-a3c2-b365c84ba134" * 40
    assert string_hash(member) == _java_hash_by_units(member)


def test_shared_partitions_are_each_topics_partitions_in_turn() -> None:
    ids = {"b": [0, 1, 2], "a": [3, 5]}
    expected = topic_partitions("b", [0, 1, 2]) + topic_partitions("a", [3, 5])
    assert shared_partitions(["b", "a"], ids) == expected
    assert shared_partitions(["b", "a"], ids) == expected  # the second time from the cache


def test_shared_partitions_give_way_to_a_big_group() -> None:
    assert shared_partitions(["t"], {"t": range(SHARED_PARTITIONS + 1)}) is None


def test_rackless_views_of_equal_counts_are_equal() -> None:
    view = ClusterView.of_counts({"a": 3, "b": 3, "c": 2000})
    assert view.topics["a"] == (PartitionMeta(0), PartitionMeta(1), PartitionMeta(2))
    assert view.topics["b"] == view.topics["a"]
    assert [meta.partition for meta in view.topics["c"]] == list(range(2000))


def test_assign_lists_gives_each_member_the_partitions_assign_wraps() -> None:
    view = ClusterView.of_counts({"t": 7, "u": 3})
    owned = (TopicPartition("t", 0), TopicPartition("u", 2))
    group = GroupSubscription({
        "m-b": Subscription(("t", "u"), owned_partitions=owned, generation_id=3),
        "m-a": Subscription(("t",), generation_id=3),
        "m-c": Subscription(("t", "u")),
    })
    for cls in ASSIGNORS.values():
        wrapped = cls().assign(view, group)
        lists = cls().assign_lists(view, group)
        assert {m: tuple(lists.get(m, ())) for m in group.members} == {m: a.partitions for m, a in wrapped.items()}
