"""Replica placement (spec §9): AdminUtils and StripedReplicaPlacer vectors and properties."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rebalance_lab.clients.java_random import JavaRandom, MockRandom
from rebalance_lab.clients.placement import (
    AdminOperationError,
    BrokerInfo,
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    java_hashmap_put_order,
    java_string_hash,
    place_replicas,
    rack_alternated_broker_list,
)


def plain(*ids: int) -> list[BrokerInfo]:
    return [BrokerInfo(i) for i in ids]


def racked(racks: dict[int, str]) -> list[BrokerInfo]:
    return [BrokerInfo(i, r) for i, r in racks.items()]


def admin(brokers: list[BrokerInfo], partitions: int, rf: int, fixed: int, start: int = -1) -> dict[int, list[int]]:
    placed = place_replicas(
        brokers, partitions, rf, algorithm="adminutils", fixed_start_index=fixed, start_partition_id=start
    )
    return dict(enumerate(placed, start=max(0, start)))


def as_lists(text: str) -> dict[int, list[int]]:
    """'0:[0,1,2] 1:[1,2,3]' -> {0: [0, 1, 2], 1: [1, 2, 3]}"""
    result = {}
    for item in text.split():
        pid, replicas = item.split(":")
        result[int(pid)] = [int(b) for b in replicas.strip("[]").split(",")]
    return result


# --------------------------------------------------------------------------- AdminUtils vectors


def test_rack_unaware_assignment_matches_kafka_test_replica_assignment() -> None:
    expected = "0:[0,1,2] 1:[1,2,3] 2:[2,3,4] 3:[3,4,0] 4:[4,0,1] 5:[0,2,3] 6:[1,3,4] 7:[2,4,0] 8:[3,0,1] 9:[4,1,2]"
    assert admin(plain(0, 1, 2, 3, 4), 10, 3, fixed=0) == as_lists(expected)


def test_rack_unaware_assignment_with_fixed_start_two_matches_kafka() -> None:
    expected = "0:[2,0,1] 1:[3,1,2] 2:[4,2,3] 3:[0,3,4] 4:[1,4,0] 5:[2,1,3] 6:[3,2,4] 7:[4,3,0] 8:[0,4,1] 9:[1,0,2]"
    assert admin(plain(0, 1, 2, 3, 4), 10, 3, fixed=2) == as_lists(expected)


def test_added_partitions_continue_from_the_start_partition_id() -> None:
    expected = "10:[0,2,3] 11:[1,3,4] 12:[2,4,0] 13:[3,0,1] 14:[4,1,2]"
    assert admin(plain(0, 1, 2, 3, 4), 5, 3, fixed=0, start=10) == as_lists(expected)


def test_add_partitions_on_all_servers_matches_kafka_add_partitions_test() -> None:
    expected = "1:[3,2,0,1] 2:[0,3,1,2] 3:[1,0,2,3] 4:[2,3,0,1] 5:[3,0,1,2] 6:[0,1,2,3]"
    assert admin(plain(0, 1, 2, 3), 6, 4, fixed=2, start=1) == as_lists(expected)


def test_add_partitions_on_partial_servers_matches_kafka_add_partitions_test() -> None:
    assert admin(plain(0, 1, 2, 3), 2, 2, fixed=1, start=1) == as_lists("1:[2,0] 2:[3,1]")


def test_rack_alternated_list_takes_one_broker_per_rack_in_turn() -> None:
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    assert rack_alternated_broker_list(racks) == [0, 3, 1, 5, 4, 2]
    del racks[5]
    assert rack_alternated_broker_list(racks) == [0, 3, 1, 4, 2]


def test_rack_alternated_list_ignores_input_order() -> None:
    racks = {5: "rack1", 4: "rack2", 3: "rack2", 2: "rack3", 1: "rack3", 0: "rack1"}
    assert rack_alternated_broker_list(racks) == [0, 3, 1, 5, 4, 2]


def test_rack_aware_assignment_matches_kafka_alternated_list_test() -> None:
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    expected = "0:[0,3,1] 1:[3,1,5] 2:[1,5,4] 3:[5,4,2] 4:[4,2,0] 5:[2,0,3] 6:[0,4,2]"
    assert admin(racked(racks), 7, 3, fixed=0) == as_lists(expected)


def test_rack_aware_assignment_with_fixed_start_two_matches_kafka() -> None:
    racks = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1"}
    expected = "0:[3,2,0] 1:[5,4,1] 2:[2,0,3] 3:[4,1,5] 4:[0,3,2] 5:[1,5,4]"
    assert admin(racked(racks), 6, 3, fixed=2) == as_lists(expected)


def test_rack_aware_assignment_of_thirteen_partitions_matches_kafka() -> None:
    racks = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1"}
    expected = (
        "0:[0,1,3] 1:[1,3,5] 2:[3,5,2] 3:[5,2,4] 4:[2,4,0] 5:[4,0,1] 6:[0,2,4] 7:[1,4,0] 8:[3,0,1] "
        "9:[5,1,3] 10:[2,3,5] 11:[4,5,2] 12:[0,3,2]"
    )
    assert admin(racked(racks), 13, 3, fixed=0) == as_lists(expected)


def test_rack_aware_assignment_skips_brokers_that_already_hold_a_replica() -> None:
    racks = {0: "a", 1: "b", 2: "c", 3: "a", 4: "a"}
    expected = "0:[2,0,1,3] 1:[3,1,2,4] 2:[4,2,1,3] 3:[0,1,2,3] 4:[1,4,2,3] 5:[2,4,1,3]"
    assert admin(racked(racks), 6, 4, fixed=2) == as_lists(expected)


def test_rack_aware_assignment_with_more_replicas_than_racks_covers_every_rack() -> None:
    racks = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack2"}
    expected = "0:[0,1,3,2,4] 1:[1,3,0,2,4] 2:[3,2,0,1,4] 3:[2,4,0,1,3] 4:[4,5,0,1,3] 5:[5,0,3,2,4]"
    assert admin(racked(racks), 6, 5, fixed=0) == as_lists(expected)


def test_random_start_index_and_shift_are_two_draws_from_one_java_random() -> None:
    # Java: startIndex = RAND.nextInt(n), then nextReplicaShift = RAND.nextInt(n).
    draws = JavaRandom(99)
    start, shift = draws.next_int(5), draws.next_int(5)
    placed = place_replicas(plain(0, 1, 2, 3, 4), 1, 2, algorithm="adminutils", seed=99)
    assert placed == [[start, (start + 1 + shift % 4) % 5]]


def test_adminutils_rejects_zero_partitions_with_kafka_message() -> None:
    with pytest.raises(InvalidPartitionsError, match=r"^Number of partitions must be larger than 0\.$"):
        place_replicas(plain(0, 1), 0, 1, algorithm="adminutils", seed=1)


def test_adminutils_rejects_replication_factor_above_broker_count_with_kafka_message() -> None:
    with pytest.raises(
        InvalidReplicationFactorError, match=r"^Replication factor: 3 larger than available brokers: 2\.$"
    ):
        place_replicas(plain(0, 1), 1, 3, algorithm="adminutils", seed=1)


def test_adminutils_rejects_zero_replication_factor_with_kafka_message() -> None:
    with pytest.raises(InvalidReplicationFactorError, match=r"^Replication factor must be larger than 0\.$"):
        place_replicas(plain(0, 1), 1, 0, algorithm="adminutils", seed=1)


def test_adminutils_rejects_partial_rack_information() -> None:
    brokers = [BrokerInfo(0, "a"), BrokerInfo(1)]
    with pytest.raises(AdminOperationError, match="Not all brokers have rack information"):
        place_replicas(brokers, 1, 1, algorithm="adminutils", seed=1)


def test_safe_rack_mode_drops_partial_rack_information() -> None:
    brokers = [BrokerInfo(0, "a"), BrokerInfo(1), BrokerInfo(2, "b")]
    placed = place_replicas(brokers, 3, 2, algorithm="adminutils", fixed_start_index=0, rack_aware_mode="safe")
    assert placed == place_replicas(plain(0, 1, 2), 3, 2, algorithm="adminutils", fixed_start_index=0)


def test_disabled_rack_mode_ignores_complete_rack_information() -> None:
    brokers = racked({0: "a", 1: "a", 2: "b"})
    placed = place_replicas(brokers, 3, 2, algorithm="adminutils", fixed_start_index=0, rack_aware_mode="disabled")
    assert placed == place_replicas(plain(0, 1, 2), 3, 2, algorithm="adminutils", fixed_start_index=0)


# --------------------------------------------------------------------------- StripedReplicaPlacer vectors


def striped(brokers: list[BrokerInfo], partitions: int, rf: int, rng: JavaRandom | MockRandom) -> list[list[int]]:
    return place_replicas(brokers, partitions, rf, algorithm="striped", rng=rng)


def test_successful_placement_matches_kafka_striped_test() -> None:
    expected = [[2, 3, 0], [3, 0, 1], [0, 1, 2], [1, 2, 3], [1, 0, 2]]
    assert striped(plain(0, 3, 2, 1), 5, 3, MockRandom()) == expected


def test_fenced_replica_is_avoided_on_a_single_rack_if_possible() -> None:
    brokers = [BrokerInfo(3), BrokerInfo(1, fenced=True), BrokerInfo(0), BrokerInfo(4), BrokerInfo(2)]
    expected = [[3, 4, 0, 2], [4, 0, 2, 3], [0, 2, 3, 4], [2, 3, 4, 0], [0, 4, 3, 2]]
    assert striped(brokers, 5, 4, MockRandom()) == expected


def test_fenced_replica_is_used_on_a_single_rack_when_needed() -> None:
    brokers = [BrokerInfo(3), BrokerInfo(1, fenced=True), BrokerInfo(2)]
    assert striped(brokers, 4, 3, MockRandom()) == [[3, 2, 1], [2, 3, 1], [3, 2, 1], [2, 3, 1]]


def test_rack_list_with_multiple_racks_matches_kafka() -> None:
    brokers = [
        BrokerInfo(11, "1"),
        BrokerInfo(10, "1"),
        BrokerInfo(30, "3"),
        BrokerInfo(31, "3"),
        BrokerInfo(21, "2"),
        BrokerInfo(20, "2", fenced=True),
    ]
    expected = [[11, 21, 31, 10], [21, 30, 10, 20], [31, 11, 21, 30]]
    assert striped(brokers, 3, 4, MockRandom()) == expected


def test_rack_list_with_fenced_only_racks_matches_kafka() -> None:
    brokers = [
        BrokerInfo(11, "1"),
        BrokerInfo(10, "1"),
        BrokerInfo(30, "3", fenced=True),
        BrokerInfo(31, "3", fenced=True),
        BrokerInfo(21, "2", fenced=True),
        BrokerInfo(20, "2", fenced=True),
        BrokerInfo(41, "4"),
        BrokerInfo(40, "4", fenced=True),
    ]
    expected = [[41, 11, 21, 30], [10, 20, 31, 41], [41, 21, 30, 11]]
    assert striped(brokers, 3, 4, MockRandom()) == expected


def test_even_distribution_matches_kafka_striped_test() -> None:
    placed = striped(plain(0, 1, 2, 3), 200, 2, MockRandom())
    counts = Counter(tuple(p) for p in placed)
    expected = {
        (0, 1): 14, (0, 2): 22, (0, 3): 14, (1, 0): 17, (1, 2): 17, (1, 3): 16,
        (2, 0): 13, (2, 1): 17, (2, 3): 20, (3, 0): 20, (3, 1): 19, (3, 2): 11,
    }  # fmt: skip
    assert dict(counts) == expected


def test_three_racks_of_two_with_mock_random_match_kafka() -> None:
    brokers = racked({0: "a", 1: "a", 2: "b", 3: "b", 4: "c", 5: "c"})
    expected = [[3, 4, 1], [5, 0, 2], [1, 3, 4], [2, 5, 0], [4, 1, 3], [0, 2, 5]]
    assert striped(brokers, 6, 3, MockRandom(17)) == expected


def test_three_racks_of_two_with_java_random_zero_match_kafka() -> None:
    brokers = racked({0: "a", 1: "a", 2: "b", 3: "b", 4: "c", 5: "c"})
    expected = [[4, 1, 3], [0, 2, 5], [3, 4, 1], [5, 0, 2], [1, 3, 4], [2, 5, 0]]
    assert striped(brokers, 6, 3, JavaRandom(0)) == expected


def test_four_brokers_without_racks_match_kafka() -> None:
    expected = [[2, 3], [3, 0], [0, 1], [1, 2], [1, 0], [0, 2], [2, 3], [3, 1], [1, 0], [0, 2]]
    assert striped(plain(0, 1, 2, 3), 10, 2, MockRandom(17)) == expected


def test_racks_are_initialised_in_java_hashmap_order_not_sorted_order() -> None:
    brokers = racked({0: "b0", 1: "b0", 2: "c", 3: "c"})
    assert java_hashmap_put_order(["b0", "c"], java_string_hash) == ["c", "b0"]
    expected = [[1, 3], [2, 0], [1, 3], [2, 0], [1, 2], [3, 0]]
    assert striped(brokers, 6, 2, MockRandom(17)) == expected


def test_mixed_fencing_matches_kafka() -> None:
    brokers = [BrokerInfo(0, "a"), BrokerInfo(1, "a", fenced=True), BrokerInfo(2, "b"), BrokerInfo(3, "c", fenced=True)]
    assert striped(brokers, 4, 3, MockRandom(17)) == [[0, 2, 3], [2, 3, 0], [2, 3, 0], [0, 3, 2]]


def test_single_unfenced_broker_is_reused_without_reshuffling() -> None:
    assert striped(plain(0), 3, 1, MockRandom(17)) == [[0], [0], [0]]


def test_striped_rejects_non_positive_replication_factor_with_kafka_message() -> None:
    with pytest.raises(InvalidReplicationFactorError, match=r"^Invalid replication factor 0: the replication factor"):
        striped(plain(0, 1), 1, 0, MockRandom())


def test_striped_rejects_all_fenced_brokers_with_kafka_message() -> None:
    with pytest.raises(InvalidReplicationFactorError, match=r"^All brokers are currently fenced"):
        striped([BrokerInfo(0, fenced=True)], 1, 1, MockRandom())


def test_striped_rejects_replication_factor_above_broker_count_with_kafka_message() -> None:
    with pytest.raises(
        InvalidReplicationFactorError, match=r"^The target replication factor of 3 cannot be reached because only 2 "
    ):
        striped(plain(0, 1), 1, 3, MockRandom())


def test_striped_rejects_adminutils_only_parameters() -> None:
    with pytest.raises(ValueError):
        place_replicas(plain(0, 1), 1, 1, algorithm="striped", fixed_start_index=0)


def test_placement_rejects_duplicate_broker_ids() -> None:
    with pytest.raises(ValueError, match="duplicate"):
        place_replicas(plain(0, 0), 1, 1, seed=1)


def test_placement_is_deterministic_for_a_seed() -> None:
    brokers = racked({i: "abc"[i % 3] for i in range(7)})
    for algorithm in ("striped", "adminutils"):
        first = place_replicas(brokers, 20, 3, algorithm=algorithm, seed=12345)  # type: ignore[arg-type]
        assert first == place_replicas(brokers, 20, 3, algorithm=algorithm, seed=12345)  # type: ignore[arg-type]


def test_hashmap_order_matches_java_for_thirteen_member_ids() -> None:
    keys = [f"member-{i}" for i in range(13)]
    expected = [f"member-{i}" for i in (5, 6, 3, 4, 12, 9, 11, 10, 7, 8, 1, 2, 0)]
    assert java_hashmap_put_order(keys, java_string_hash) == expected


def test_java_string_hash_matches_the_jdk() -> None:
    assert [java_string_hash(s) for s in ("consumer1", "C0", "t0", "topic", "topic1")] == [
        -421004549, 2125, 3644, 110546223, -868034334,
    ]  # fmt: skip


# --------------------------------------------------------------------------- properties

RACKS = st.sampled_from(["a", "b", "c", "d"])


@st.composite
def clusters(draw: st.DrawFn, *, racks: bool, fencing: bool = False) -> list[BrokerInfo]:
    ids = draw(st.lists(st.integers(min_value=0, max_value=50), min_size=1, max_size=10, unique=True))
    return [BrokerInfo(i, draw(RACKS) if racks else None, fencing and draw(st.booleans())) for i in ids]


@given(clusters(racks=False), st.integers(1, 30), st.integers(1, 10), st.integers(0, 2**48))
def test_rack_unaware_partitions_get_rf_distinct_brokers(brokers: list[BrokerInfo], n: int, rf: int, seed: int) -> None:
    rf = min(rf, len(brokers))
    placed = place_replicas(brokers, n, rf, algorithm="adminutils", seed=seed)
    ids = {b.id for b in brokers}
    assert len(placed) == n
    assert all(len(set(p)) == rf == len(p) and set(p) <= ids for p in placed)


@given(clusters(racks=True), st.integers(1, 30), st.integers(1, 10), st.integers(0, 2**48))
def test_rack_aware_placement_spreads_replicas_over_racks(
    brokers: list[BrokerInfo], n: int, rf: int, seed: int
) -> None:
    rf = min(rf, len(brokers))
    rack_of = {b.id: b.rack for b in brokers}
    num_racks = len(set(rack_of.values()))
    for p in place_replicas(brokers, n, rf, algorithm="adminutils", seed=seed):
        assert len(set(p)) == rf
        # One replica per rack while racks last; every rack covered once rf reaches them.
        assert len({rack_of[b] for b in p}) == min(rf, num_racks)


@given(clusters(racks=True), st.integers(1, 30), st.integers(0, 2**48))
def test_rack_aware_leaders_are_spread_evenly(brokers: list[BrokerInfo], rounds: int, seed: int) -> None:
    n = rounds * len(brokers)
    leaders = Counter(p[0] for p in place_replicas(brokers, n, 1, algorithm="adminutils", seed=seed))
    assert set(leaders.values()) == {rounds}


@given(clusters(racks=True, fencing=True), st.integers(0, 30), st.integers(1, 10), st.integers(0, 2**48))
def test_striped_partitions_get_rf_distinct_brokers_led_by_unfenced_ones(
    brokers: list[BrokerInfo], n: int, rf: int, seed: int
) -> None:
    rf = min(rf, len(brokers))
    unfenced = {b.id for b in brokers if not b.fenced}
    if not unfenced:
        with pytest.raises(InvalidReplicationFactorError):
            place_replicas(brokers, n, rf, seed=seed)
        return
    placed = place_replicas(brokers, n, rf, seed=seed)
    assert len(placed) == n
    for p in placed:
        assert len(p) == len(set(p)) == rf
        # Only the leader must be unfenced: followers prefer another rack's fenced broker
        # to a second broker of the leader's rack (Rack.next falls back to fenced).
        assert p[0] in unfenced


@given(st.lists(st.text(max_size=6), max_size=120, unique=True))
def test_hashmap_order_is_a_permutation_of_the_keys(keys: list[str]) -> None:
    try:
        ordered = java_hashmap_put_order(keys, java_string_hash)
    except ValueError:  # a tree bin: only adversarial key sets get there
        return
    assert sorted(ordered) == sorted(keys)
