"""The Java orders behind the server assignors: ``Uuid``, ``TimelineHashMap``, ``HashSet<Integer>``,
``OverlayMap`` and subscription name sets. Vectors are Java's (jshell / the oracle)."""

from __future__ import annotations

import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from rebalance_lab.clients.assignors.java_hashmap import JavaHashMap, UnsupportedJavaOrder, string_hash_order
from rebalance_lab.coordinator.consumer.assignors.int_sets import IntHashSet
from rebalance_lab.coordinator.consumer.assignors.java_order import (
    TimelineKeyOrder,
    int_hash,
    member_spec_order,
    overlay_order,
    subscription_name_order,
    uuid_hash,
    uuid_sort_key,
    uuid_string,
)


def _uuid(msb: int, lsb: int) -> uuid.UUID:
    return uuid.UUID(int=((msb % 2**64) << 64) | (lsb % 2**64))


def test_uuid_hash_and_string_match_kafka() -> None:
    a = _uuid(0x0123456789ABCDEF, 0xFEDCBA9876543210)
    b = _uuid(-1, 1)
    c = _uuid(1, -1)
    assert (uuid_hash(a), uuid_string(a)) == (0, "ASNFZ4mrze_-3LqYdlQyEA")
    assert (uuid_hash(b), uuid_string(b)) == (1, "__________8AAAAAAAAAAQ")
    assert (uuid_hash(c), uuid_string(c)) == (1, "AAAAAAAAAAH__________w")


def test_uuid_order_compares_signed_halves_so_a_negative_msb_sorts_first() -> None:
    assert uuid_sort_key(_uuid(-1, 1)) < uuid_sort_key(_uuid(1, -1))
    assert uuid_sort_key(_uuid(1, -1)) < uuid_sort_key(_uuid(1, 0))


def test_timeline_hash_map_iterates_like_kafkas_member_map() -> None:
    order = TimelineKeyOrder(f"member-{i}" for i in range(10))
    assert list(order) == [
        "member-8", "member-3", "member-0", "member-5", "member-7",
        "member-2", "member-9", "member-4", "member-6", "member-1",
    ]


def test_timeline_hash_map_keeps_a_replaced_key_in_place_and_forgets_a_removed_one() -> None:
    order = TimelineKeyOrder(f"m{i}" for i in range(6))
    before = list(order)
    order.put("m3")
    assert list(order) == before
    order.remove("m3")
    assert list(order) == [k for k in before if k != "m3"]
    assert "m3" not in order and len(order) == 5


def test_overlay_order_keeps_the_group_order_and_appends_new_members() -> None:
    assert overlay_order(["b", "a", "c"], removed=["a"], added=["z", "y"]) == ["b", "c", *string_hash_order(["z", "y"])]


def test_member_spec_order_is_a_default_hash_map_order() -> None:
    ids = [f"member-{i}" for i in range(13)]
    assert member_spec_order(ids) == [
        "member-5", "member-6", "member-3", "member-4", "member-12", "member-9", "member-11",
        "member-10", "member-7", "member-8", "member-1", "member-2", "member-0",
    ]


def test_subscription_names_iterate_as_a_hash_set_presized_for_the_request_list() -> None:
    assert subscription_name_order(["t1", "t0"]) == ("t0", "t1")  # String.hashCode buckets 3644, 3645
    # UnionSet iterates the larger set first (the regex's on a tie), then what the other adds.
    assert subscription_name_order(["a"], regex_topics=["b", "a"]) == ("a", "b")
    assert subscription_name_order(["x", "y"], regex_topics=["z"]) == ("x", "y", "z")


@settings(max_examples=200, deadline=None)
@given(
    capacity=st.one_of(st.none(), st.integers(0, 70)),
    ops=st.lists(st.tuples(st.booleans(), st.integers(0, 300)), max_size=120),
)
def test_int_hash_set_iterates_like_javas_hash_map(capacity: int | None, ops: list[tuple[bool, int]]) -> None:
    """Our sort-based ``HashSet<Integer>`` agrees with the chained-table emulation (itself checked against
    Java), adds and removes mixed, any initial capacity."""
    fast = IntHashSet(capacity)
    table: JavaHashMap[int, None] = JavaHashMap(int_hash, capacity)
    try:
        for add, value in ops:
            if add:
                fast.add(value)
                table.put(value, None)
            else:
                fast.remove(value)
                table.remove(value)
    except UnsupportedJavaOrder:
        return  # a tree bin: neither claims its order
    assert fast.keys() == list(table.keys())
    assert len(fast) == len(table)
