"""Java HashMap iteration order and String ordering (spec assignors.md §5.8, §2.2)."""

from __future__ import annotations

import pytest

from rebalance_lab.clients.assignors.java_hashmap import (
    JavaHashMap,
    UnsupportedJavaOrder,
    java_hash_order,
    java_str_key,
    string_hash,
    string_hash_order,
    table_size_for,
    topic_partition_hash,
)
from rebalance_lab.clients.assignors.types import TopicPartition


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("consumer1", -421004549),
        ("consumer10", -166239083),
        ("C0", 2125),
        ("t0", 3644),
        ("topic", 110546223),
        ("topic1", -868034334),
        ("", 0),
    ],
)
def test_string_hash_matches_java(text: str, expected: int) -> None:
    assert string_hash(text) == expected


def test_string_hash_uses_utf16_code_units_for_supplementary_characters() -> None:
    # U+1F600 is the surrogate pair D83D DE00 in Java.
    assert string_hash("\U0001f600") == 0xD83D * 31 + 0xDE00


def test_members_0_to_12_iterate_in_java_order() -> None:
    keys = [f"member-{i}" for i in range(13)]
    assert string_hash_order(keys) == [
        "member-5",
        "member-6",
        "member-3",
        "member-4",
        "member-12",
        "member-9",
        "member-11",
        "member-10",
        "member-7",
        "member-8",
        "member-1",
        "member-2",
        "member-0",
    ]


def test_c00_to_c19_iterate_in_java_order() -> None:
    assert string_hash_order([f"c{i:02d}" for i in range(20)]) == [
        "c00",
        "c11",
        "c10",
        "c02",
        "c13",
        "c01",
        "c12",
        "c04",
        "c15",
        "c03",
        "c14",
        "c06",
        "c17",
        "c05",
        "c16",
        "c08",
        "c19",
        "c07",
        "c18",
        "c09",
    ]


def test_colliding_member_ids_keep_insertion_order_inside_their_bucket() -> None:
    assert string_hash_order(["member-10", "member-9", "member-8", "member-7"]) == [
        "member-9",
        "member-10",
        "member-7",
        "member-8",
    ]


def test_topic_partitions_of_one_topic_iterate_in_descending_partition_order() -> None:
    keys = [TopicPartition("t0", i) for i in range(6)]
    assert [tp.partition for tp in java_hash_order(keys, topic_partition_hash)] == [5, 4, 3, 2, 1, 0]


def test_compute_if_absent_puts_new_keys_at_the_chain_head_unlike_put() -> None:
    keys = ["t10", "topic", "t1", "x", "mid"]
    m: JavaHashMap[str, list[int]] = JavaHashMap(string_hash)
    for k in keys:
        m.compute_if_absent(k, lambda _k: [])
    assert list(m.keys()) == ["t10", "x", "mid", "topic", "t1"]
    assert string_hash_order(keys) == ["t10", "x", "topic", "mid", "t1"]


def test_remove_keeps_the_larger_capacity() -> None:
    m: JavaHashMap[str, None] = JavaHashMap(string_hash)
    for i in range(13):
        m.put(f"member-{i}", None)
    for i in range(13):
        m.remove(f"member-{i}")
    for k in ["member-10", "member-9"]:
        m.put(k, None)
    # With 32 buckets the two ids no longer collide the way they do in a 16-bucket table.
    assert len(m) == 2 and set(m.keys()) == {"member-10", "member-9"}


def test_put_replaces_a_value_in_place() -> None:
    m: JavaHashMap[str, int] = JavaHashMap(string_hash)
    m.put("a", 1)
    m.put("b", 2)
    m.put("a", 3)
    assert list(m.items()) == [("a", 3), ("b", 2)]
    assert m.first_key() == "a"


def test_table_size_for_rounds_up_to_a_power_of_two() -> None:
    assert [table_size_for(n) for n in (0, 1, 12, 16, 17)] == [1, 1, 16, 16, 32]


def test_a_tree_bin_is_refused_rather_than_guessed() -> None:
    # Every key hashes to 0: after growing to 64 buckets a ninth colliding key needs a tree bin.
    m: JavaHashMap[int, None] = JavaHashMap(lambda _k: 0)
    with pytest.raises(UnsupportedJavaOrder):
        for i in range(20):
            m.put(i, None)


def test_java_string_order_compares_utf16_code_units() -> None:
    bmp_high, astral = "\ufb01", "\U0001f600"
    assert astral > bmp_high  # Python code points
    assert java_str_key(astral) < java_str_key(bmp_high)  # Java: D83D < FB01
