"""The KRaft controller's 10,000-record bound on CreateTopics and CreatePartitions (issue 17, defect 2).

Each expectation is Kafka 4.4.0's answer (``integration/test_kafka_limits.py`` runs the same requests
on the real broker); before the bound, 1,000,000 partitions stalled the emulator for seconds and
2^31-1 ran it out of memory.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from rebalance_lab.config import Flavor
from rebalance_lab.coordinator.controller_limits import (
    BATCH_TOO_LARGE,
    TOO_MANY_ADDITIONAL_PARTITIONS,
    TOO_MANY_PARTITIONS,
)
from rebalance_lab.protocol.errors import ErrorCode
from tests.unit.dataplane.harness import call, make_world, request_class

CREATE_TOPICS, CREATE_PARTITIONS = 19, 37
CREATABLE = request_class(CREATE_TOPICS, "CreatableTopic")
ASSIGNMENT = request_class(CREATE_TOPICS, "CreatableReplicaAssignment")
CONFIG = request_class(CREATE_TOPICS, "CreatableTopicConfig")
GROW = request_class(CREATE_PARTITIONS, "CreatePartitionsTopic")
POLICY = ErrorCode.POLICY_VIOLATION


def _topic(name: str, partitions: int, configs: int = 0) -> Any:
    settings = [CONFIG(name=n, value=v) for n, v in [("retention.ms", "1000"), ("cleanup.policy", "compact")][:configs]]
    return CREATABLE(name=name, num_partitions=partitions, replication_factor=1, assignments=[], configs=settings)


async def _create(world: Any, *topics: Any, validate_only: bool = False, version: int = 7) -> list[tuple[Any, ...]]:
    response = await call(world, CREATE_TOPICS, version, topics=list(topics), timeout_ms=1000,
                          validate_only=validate_only)
    return [(t.name, t.error_code, t.error_message) for t in response.topics]


async def _grow(world: Any, *counts: tuple[str, int], validate_only: bool = False) -> list[tuple[Any, ...]]:
    topics = [GROW(name=name, count=count, assignments=None) for name, count in counts]
    response = await call(world, CREATE_PARTITIONS, 3, topics=topics, timeout_ms=1000, validate_only=validate_only)
    return [(r.name, r.error_code, r.error_message) for r in response.results]


@pytest.mark.parametrize("flavor", [Flavor.KAFKA_4, Flavor.KAFKA_3])
@pytest.mark.parametrize("validate_only", [False, True])
async def test_more_than_ten_thousand_partitions_fail_the_request_and_create_nothing(
        flavor: Flavor, validate_only: bool) -> None:
    world = make_world(flavor=flavor)
    results = await _create(world, _topic("big", 10_001), validate_only=validate_only)
    assert results == [("big", POLICY, TOO_MANY_PARTITIONS)]
    assert "big" not in world.cluster.topics


async def test_two_to_the_31_partitions_are_refused_at_once() -> None:
    world = make_world()
    started = time.perf_counter()
    assert await _create(world, _topic("huge", 2**31 - 1)) == [("huge", POLICY, TOO_MANY_PARTITIONS)]
    print(f"refused in {(time.perf_counter() - started) * 1000:.1f} ms")  # a figure, not an assertion


async def test_the_sum_over_topics_counts_and_every_topic_fails_in_request_order() -> None:
    world = make_world(num_partitions=1)
    world.cluster.create_topic("exists", 1)
    topics = [_topic("a", 6000), _topic("x", 1), _topic("bad name!", 1), _topic("x", 1), _topic("exists", 1),
              _topic("minus", -1), _topic("zero", 0), _topic("b", 3998)]
    results = await _create(world, *topics, version=4)
    # 6000 + 1 + 1 + 1 + 1 + num.partitions (1) + 0 + 3998 = 10,003: the whole request fails, duplicates twice.
    assert results == [(t.name, POLICY, TOO_MANY_PARTITIONS) for t in topics]
    assert set(world.cluster.topics) == {"exists"}


async def test_manual_assignments_count_one_partition_each() -> None:
    world = make_world()
    assignments = [ASSIGNMENT(partition_index=i, broker_ids=[0]) for i in range(10_001)]
    manual = CREATABLE(name="m", num_partitions=-1, replication_factor=-1, assignments=assignments, configs=[])
    assert await _create(world, manual, validate_only=True) == [("m", POLICY, TOO_MANY_PARTITIONS)]


@pytest.mark.parametrize(("topics", "expected"), [
    ([("one", 10_000, 0)], BATCH_TOO_LARGE),  # TopicRecord + 10,000 PartitionRecords
    ([("one", 9_999, 0)], None),
    ([("one", 9_998, 1)], None),  # + one ConfigRecord: exactly 10,000 records
    ([("one", 9_998, 2)], BATCH_TOO_LARGE),
    ([("q1", 4_999, 0), ("q2", 4_999, 0)], None),
    ([("c", 3, 0), ("d", -1, 0), ("e", 9_996, 0)], BATCH_TOO_LARGE),  # 3 topic records + 10,000 partitions
])
async def test_the_records_a_creation_writes_are_bounded_too(topics: list[tuple[str, int, int]],
                                                            expected: str | None) -> None:
    world = make_world(num_partitions=1)
    results = await _create(world, *(_topic(n, p, c) for n, p, c in topics), validate_only=True)
    if expected is None:
        assert all(code == 0 for _n, code, _m in results)
    else:
        assert results == [(n, POLICY, expected) for n, _p, _c in topics]


async def test_a_topic_that_fails_on_its_own_writes_no_records() -> None:
    world = make_world()
    world.cluster.create_topic("exists", 1)
    results = await _create(world, _topic("exists", 1), _topic("n2", 9_999), validate_only=True)
    assert [code for _n, code, _m in results] == [ErrorCode.TOPIC_ALREADY_EXISTS, 0]


@pytest.mark.parametrize("validate_only", [False, True])
async def test_create_partitions_allows_ten_thousand_more_and_refuses_one_more(validate_only: bool) -> None:
    world = make_world()
    world.cluster.create_topic("g", 2)
    assert await _grow(world, ("g", 10_003), validate_only=validate_only) == [
        ("g", POLICY, TOO_MANY_ADDITIONAL_PARTITIONS)]
    assert len(world.cluster.topics["g"].partitions) == 2
    assert await _grow(world, ("g", 10_002), validate_only=True) == [("g", 0, None)]


async def test_create_partitions_sums_increases_and_fails_every_topic_in_request_order() -> None:
    world = make_world()
    world.cluster.create_topic("g", 2)
    world.cluster.create_topic("h", 1)
    counts = [("unknown", 20_000), ("g", 1), ("g", 6), ("h", 6_000), ("g", 5_000)]
    results = await _grow(world, *counts, validate_only=True)
    assert results == [(n, POLICY, TOO_MANY_ADDITIONAL_PARTITIONS) for n, _c in counts]
    assert await _grow(world, ("g", 2**31 - 1)) == [("g", POLICY, TOO_MANY_ADDITIONAL_PARTITIONS)]


async def test_the_kafka_3_flavor_fails_the_topic_that_overflows_the_record_list() -> None:
    world = make_world(flavor=Flavor.KAFKA_3)
    g, h = "g-c09552", "h-c09552"  # the names of the broker run, so the java.util.HashSet order is its own
    world.cluster.create_topic(g, 2)
    world.cluster.create_topic(h, 1)
    assert await _grow(world, (g, 10_003)) == [(g, ErrorCode.UNKNOWN_SERVER_ERROR, None)]
    # Kafka 3.9.2 visits h before g: h's 5,999 new partitions fit, g's 5,998 more do not.
    assert await _grow(world, (g, 6_000), (h, 6_000)) == [(h, 0, None), (g, ErrorCode.UNKNOWN_SERVER_ERROR, None)]
    assert (len(world.cluster.topics[h].partitions), len(world.cluster.topics[g].partitions)) == (6_000, 2)
