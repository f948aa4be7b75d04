"""Producer partitioning (spec §8): murmur2 vectors, uniform sticky and round robin."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rebalance_lab.clients.partitioners import (
    BuiltInPartitioner,
    RoundRobinPartitioner,
    TopicPartitions,
    build_load_stats,
    murmur2,
    partition_for_key,
    to_positive,
)

# input, murmur2, then partition for 3 / 6 / 10 / 100 partitions (spec §8.2, Kafka's output).
STRING_VECTORS = [
    ("", 275646681, 0, 3, 1, 81),
    ("a", -1563381124, 1, 4, 4, 24),
    ("ab", 316155434, 2, 2, 4, 34),
    ("abc", 479470107, 0, 3, 7, 7),
    ("abcd", -1323649548, 2, 2, 0, 0),
    ("abcde", 461995741, 1, 1, 1, 41),
    ("21", -973932308, 0, 0, 0, 40),
    ("foobar", -790332482, 0, 0, 6, 66),
    ("key", -1079937367, 1, 1, 1, 81),
    ("hello", 2132663229, 0, 3, 9, 29),
    ("kafka", -798503068, 1, 4, 0, 80),
    ("a-little-bit-long-string", -985981536, 2, 2, 2, 12),
    ("a-little-bit-longer-string", -1486304829, 2, 5, 9, 19),
    ("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971, 2, 5, 7, 77),
    ("héllo", 614509002, 0, 0, 2, 2),
    ("日本", -700811021, 0, 3, 7, 27),
]

RAW_VECTORS = [
    ("00", 375494588),
    ("ff", -311467685),
    ("ffffffff", 644171429),
    ("00000000", 850957120),
    ("80010203040506", -337809845),
]

# IntegerSerializer: 4 bytes big-endian.
INTEGER_KEY_VECTORS = [(0, 850957120), (1, -173113808), (42, 1606757304), (-1, 644171429)]


@pytest.mark.parametrize(("text", "expected", "p3", "p6", "p10", "p100"), STRING_VECTORS)
def test_murmur2_of_utf8_key_matches_kafka(text: str, expected: int, p3: int, p6: int, p10: int, p100: int) -> None:
    key = text.encode("utf-8")
    assert murmur2(key) == expected
    assert [partition_for_key(key, n) for n in (3, 6, 10, 100)] == [p3, p6, p10, p100]


@pytest.mark.parametrize(("hex_key", "expected"), RAW_VECTORS)
def test_murmur2_of_raw_bytes_matches_kafka(hex_key: str, expected: int) -> None:
    assert murmur2(bytes.fromhex(hex_key)) == expected


@pytest.mark.parametrize(("value", "expected"), INTEGER_KEY_VECTORS)
def test_murmur2_of_integer_serializer_keys_matches_kafka(value: int, expected: int) -> None:
    assert murmur2(value.to_bytes(4, "big", signed=True)) == expected


def test_murmur2_is_signed_unlike_the_python_clients() -> None:
    # kafka-python/aiokafka return 3321034988 for "21": same partition, different hash.
    assert murmur2(b"21") == -973932308
    assert murmur2(b"21") & 0xFFFFFFFF == 3321034988


def test_to_positive_is_a_mask_not_abs() -> None:
    assert to_positive(-(2**31)) == 0
    assert to_positive(-1) == 2**31 - 1
    assert to_positive(-311467685) == 1836015963


def test_empty_key_is_hashed_not_treated_as_no_key() -> None:
    assert partition_for_key(b"", 100) == 81


def test_partition_for_key_rejects_a_topic_without_partitions() -> None:
    with pytest.raises(ValueError):
        partition_for_key(b"k", 0)


@given(st.binary(max_size=64), st.integers(min_value=1, max_value=10_000))
def test_keyed_partition_is_in_range_and_a_signed_int32_hash(key: bytes, n: int) -> None:
    h = murmur2(key)
    assert -(2**31) <= h < 2**31
    assert 0 <= partition_for_key(key, n) < n


# --------------------------------------------------------------------------- load stats


def test_load_stats_invert_queue_sizes_into_a_cumulative_table() -> None:
    stats = build_load_stats([0, 3, 1], [0, 1, 2])
    assert stats is not None
    assert stats.cumulative_frequency_table == (4, 5, 8)
    assert [stats.pick(w) for w in range(8)] == [0, 0, 0, 0, 1, 2, 2, 2]


def test_adaptive_partitions_frequencies_match_kafka_test() -> None:
    # BuiltInPartitionerTest.adaptivePartitionsTest: sizes [5,0,3,0,1] -> CFT [1,7,10,16,21].
    stats = build_load_stats([5, 0, 3, 0, 1], [0, 1, 2, 3, 4])
    assert stats is not None
    assert stats.cumulative_frequency_table == (1, 7, 10, 16, 21)
    counts = Counter(stats.pick(w) for w in range(21))
    assert [counts[p] for p in range(5)] == [1, 6, 3, 6, 5]


def test_load_stats_are_dropped_when_all_queues_are_equal() -> None:
    assert build_load_stats([2, 2, 2], [0, 1, 2]) is None


def test_load_stats_are_kept_for_equal_queues_when_some_partitions_were_excluded() -> None:
    stats = build_load_stats([2, 2, 9], [4, 5, 6], length=2)
    assert stats is not None
    assert stats.partition_ids == (4, 5)
    assert stats.cumulative_frequency_table == (1, 2)


def test_load_stats_are_dropped_for_a_single_partition_topic() -> None:
    assert build_load_stats([3], [0]) is None


# --------------------------------------------------------------------------- sticky


def _scripted(values: list[int]) -> Callable[[], int]:
    source: Iterator[int] = iter(values)
    return lambda: next(source)


def test_sticky_partition_is_chosen_among_available_partitions() -> None:
    partitioner = BuiltInPartitioner("t", random_int=_scripted([7]))
    assert partitioner.current_partition(TopicPartitions(6, (1, 3, 5))) == 3  # 7 % 3 = 1 -> (1, 3, 5)[1]


def test_sticky_partition_uses_all_partitions_when_none_is_available() -> None:
    partitioner = BuiltInPartitioner("t", random_int=_scripted([-1]))
    # toPositive(-1) = 2**31 - 1; % 4 = 3
    assert partitioner.current_partition(TopicPartitions(4)) == 3


def test_sticky_partition_switches_after_batch_size_bytes() -> None:
    topic = TopicPartitions.all_available(4)
    partitioner = BuiltInPartitioner("t", 100, random_int=_scripted([0, 1, 2]))
    assert partitioner.on_append(60, topic) == 0
    assert partitioner.on_append(40, topic) == 1  # 100 >= batch.size: switch
    assert partitioner.produced_bytes == 0


def test_sticky_partition_waits_for_a_full_batch_until_twice_the_batch_size() -> None:
    topic = TopicPartitions.all_available(4)
    partitioner = BuiltInPartitioner("t", 100, random_int=_scripted([0, 3]))
    assert partitioner.on_append(150, topic, switch_allowed=False) == 0
    assert partitioner.on_append(50, topic, switch_allowed=False) == 3  # 200 >= 2 * batch.size


def test_sticky_partition_may_pick_the_same_partition_again() -> None:
    topic = TopicPartitions.all_available(2)
    partitioner = BuiltInPartitioner("t", 10, random_int=_scripted([1, 1]))
    assert partitioner.on_append(10, topic) == 1


def test_sticky_partition_follows_the_load_table_when_stats_exist() -> None:
    topic = TopicPartitions.all_available(3)
    partitioner = BuiltInPartitioner("t", random_int=_scripted([4]))
    partitioner.update_load_stats([0, 3, 1], [0, 1, 2])
    assert partitioner.current_partition(topic) == 1  # 4 % 8 = 4 -> first CFT entry > 4 is 5


def test_sticky_partitioner_rejects_a_zero_batch_size() -> None:
    with pytest.raises(ValueError, match="stickyBatchSize must be >= 1 but got 0"):
        BuiltInPartitioner("t", 0)


@given(st.lists(st.integers(min_value=0, max_value=1000), min_size=2, max_size=20), st.integers(min_value=0))
def test_weighted_choice_always_returns_a_listed_partition(sizes: list[int], random_value: int) -> None:
    ids = list(range(100, 100 + len(sizes)))
    stats = build_load_stats(sizes, ids)
    if stats is None:
        assert len(set(sizes)) == 1
    else:
        assert stats.pick(random_value) in ids
        # Each partition's share is (max queue + 1) - its queue: emptier queues weigh more.
        table = stats.cumulative_frequency_table
        shares = [b - a for a, b in itertools.pairwise((0, *table))]
        assert shares == [max(sizes) + 1 - size for size in sizes]


# --------------------------------------------------------------------------- round robin


def test_round_robin_partitioner_counts_from_zero_over_available_partitions() -> None:
    rr = RoundRobinPartitioner()
    topic = TopicPartitions(4, (0, 2, 3))
    assert [rr.partition("t", topic) for _ in range(7)] == [0, 2, 3, 0, 2, 3, 0]


def test_round_robin_partitioner_keeps_one_counter_per_topic() -> None:
    rr = RoundRobinPartitioner()
    topic = TopicPartitions.all_available(3)
    assert [rr.partition("a", topic), rr.partition("b", topic), rr.partition("a", topic)] == [0, 0, 1]


def test_round_robin_partitioner_uses_all_partitions_when_none_is_available() -> None:
    rr = RoundRobinPartitioner()
    assert [rr.partition("t", TopicPartitions(3)) for _ in range(4)] == [0, 1, 2, 0]


@given(
    st.integers(min_value=1, max_value=50),
    st.data(),
    st.lists(st.integers(min_value=0, max_value=40_000), min_size=1, max_size=60),
)
def test_sticky_partitions_are_always_available_ones(num: int, data: st.DataObject, appends: list[int]) -> None:
    available = tuple(data.draw(st.lists(st.sampled_from(range(num)), unique=True)))
    topic = TopicPartitions(num, available)
    values = iter(data.draw(st.lists(st.integers(-(2**31), 2**31 - 1), min_size=len(appends) + 1)))
    partitioner = BuiltInPartitioner("t", 16384, random_int=lambda: next(values))
    for size in appends:
        p = partitioner.on_append(size, topic)
        assert p in (available or range(num))
        assert partitioner.produced_bytes < 2 * 16384


@given(st.integers(min_value=1, max_value=20), st.integers(min_value=1, max_value=5))
def test_round_robin_partitioner_spreads_records_evenly(num: int, rounds: int) -> None:
    rr = RoundRobinPartitioner()
    topic = TopicPartitions.all_available(num)
    counts = Counter(rr.partition("t", topic) for _ in range(num * rounds))
    assert set(counts.values()) == {rounds}
