"""java.util.Random, Kafka's MockRandom and Collections.shuffle (spec §9.2 vectors)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rebalance_lab.clients.java_random import JavaRandom, MockRandom, java_shuffle, to_int32


def test_java_random_42_next_int_matches_the_jdk() -> None:
    rnd = JavaRandom(42)
    assert [rnd.next_int_unbounded() for _ in range(4)] == [-1170105035, 234785527, -1360544799, 205897768]


def test_java_random_42_next_int_bounded_matches_the_jdk() -> None:
    rnd = JavaRandom(42)
    assert [rnd.next_int(10) for _ in range(8)] == [0, 3, 8, 4, 0, 5, 5, 8]


def test_mock_random_17_next_int_matches_kafka() -> None:
    rnd = MockRandom(17)
    assert [rnd.next_int_unbounded() for _ in range(4)] == [-1553064625, -1379575778, 649309754, -422816401]


def test_mock_random_17_next_int_bounded_matches_kafka() -> None:
    rnd = MockRandom(17)
    assert [rnd.next_int(10) for _ in range(8)] == [5, 9, 7, 7, 0, 0, 2, 2]


def test_shuffle_with_java_random_42_matches_collections_shuffle() -> None:
    items = list(range(8))
    java_shuffle(items, JavaRandom(42))
    assert items == [2, 6, 3, 1, 4, 0, 7, 5]


def test_shuffle_with_mock_random_17_matches_collections_shuffle() -> None:
    items = list(range(8))
    java_shuffle(items, MockRandom(17))
    assert items == [4, 3, 7, 0, 6, 1, 2, 5]


def test_set_seed_restarts_the_sequence() -> None:
    rnd = JavaRandom(7)
    first = [rnd.next_int(100) for _ in range(5)]
    rnd.set_seed(7)
    assert [rnd.next_int(100) for _ in range(5)] == first


def test_negative_seeds_are_taken_as_java_longs() -> None:
    # Java: new Random(-1L) and new Random(0xFFFFFFFFFFFFFFFFL) are the same generator.
    a, b = JavaRandom(-1), JavaRandom((1 << 64) - 1)
    assert [a.next_int(1000) for _ in range(5)] == [b.next_int(1000) for _ in range(5)]


def test_to_int32_wraps_like_a_java_int() -> None:
    assert to_int32(2**31) == -(2**31)
    assert to_int32(2**32 + 5) == 5
    assert to_int32(-1) == -1


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1), st.integers(min_value=1, max_value=2**31 - 1))
def test_next_int_stays_within_its_bound(seed: int, bound: int) -> None:
    rnd = JavaRandom(seed)
    assert all(0 <= rnd.next_int(bound) < bound for _ in range(20))


@given(st.integers(min_value=0, max_value=2**64 - 1), st.lists(st.integers(), max_size=30))
def test_shuffle_is_a_permutation(seed: int, items: list[int]) -> None:
    shuffled = list(items)
    java_shuffle(shuffled, MockRandom(seed))
    assert sorted(shuffled) == sorted(items)
