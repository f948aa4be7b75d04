"""CreateTopics, DeleteTopics, CreatePartitions and InitProducerId handlers."""

from __future__ import annotations

from typing import Any

import pytest

from rebalance_lab.config import Flavor
from rebalance_lab.protocol.errors import ErrorCode
from tests.unit.dataplane.harness import call, make_world, request_class

CREATE_TOPICS, DELETE_TOPICS, CREATE_PARTITIONS, INIT_PRODUCER_ID = 19, 20, 37, 22
CREATABLE = request_class(CREATE_TOPICS, "CreatableTopic")
ASSIGNMENT = request_class(CREATE_TOPICS, "CreatableReplicaAssignment")
CONFIG = request_class(CREATE_TOPICS, "CreatableTopicConfig")
DELETABLE = request_class(DELETE_TOPICS, "DeleteTopicState")
GROW = request_class(CREATE_PARTITIONS, "CreatePartitionsTopic")
GROW_ASSIGNMENT = request_class(CREATE_PARTITIONS, "CreatePartitionsAssignment")


def _topic(name: str, partitions: int = -1, rf: int = -1, **extra: Any) -> Any:
    extra.setdefault("assignments", [])
    extra.setdefault("configs", [])
    return CREATABLE(name=name, num_partitions=partitions, replication_factor=rf, **extra)


async def _create(world: Any, *topics: Any, version: int = 7, validate_only: bool = False) -> list[Any]:
    response = await call(world, CREATE_TOPICS, version, topics=list(topics), timeout_ms=1000,
                          validate_only=validate_only)
    return list(response.topics)


async def test_create_topics_uses_defaults_and_echoes_configs_and_topic_id() -> None:
    world = make_world(brokers=3, num_partitions=2)
    (result,) = await _create(world, _topic("a", configs=[CONFIG(name="retention.ms", value="1000")]))
    info = world.cluster.topics["a"]
    assert (result.error_code, result.error_message, result.topic_id) == (0, None, info.topic_id)
    assert (result.num_partitions, result.replication_factor) == (2, 1)
    configs = {c.name: (c.value, c.config_source) for c in result.configs}
    assert configs["retention.ms"] == ("1000", 1) and configs["cleanup.policy"] == ("delete", 5)


async def test_validate_only_checks_but_creates_nothing() -> None:
    world = make_world()
    (result,) = await _create(world, _topic("a", 3, 1), validate_only=True)
    assert result.error_code == 0 and result.num_partitions == 3 and "a" not in world.cluster.topics


async def test_create_topics_reports_errors_per_topic() -> None:
    world = make_world()
    world.cluster.create_topic("exists", 1)
    results = await _create(world, _topic("exists"), _topic("bad name"), _topic("dup"), _topic("dup"),
                            _topic("zero", 0), _topic("cfg", configs=[CONFIG(name="nope", value="1")]),
                            _topic("ok", 1))
    # Distinct names in request order, then each duplicated name once (as Kafka 4.4 answers).
    assert [(r.name, r.error_code) for r in results] == [
        ("exists", ErrorCode.TOPIC_ALREADY_EXISTS), ("bad name", ErrorCode.INVALID_TOPIC),
        ("zero", ErrorCode.INVALID_PARTITIONS), ("cfg", ErrorCode.INVALID_CONFIG), ("ok", ErrorCode.NONE),
        ("dup", ErrorCode.INVALID_REQUEST)]
    assert results[0].error_message == "Topic 'exists' already exists."
    assert (results[0].num_partitions, results[0].configs) == (-1, [])


async def test_a_manual_assignment_places_replicas_as_given() -> None:
    world = make_world(brokers=3)
    assignments = [ASSIGNMENT(partition_index=0, broker_ids=[2, 0]), ASSIGNMENT(partition_index=1, broker_ids=[1, 2])]
    (result,) = await _create(world, _topic("a", assignments=assignments))
    assert result.error_code == 0
    assert [p.replicas for p in world.cluster.topics["a"].partitions] == [[2, 0], [1, 2]]


async def test_a_manual_assignment_with_an_unknown_broker_is_rejected() -> None:
    world = make_world()
    (result,) = await _create(world, _topic("a", assignments=[ASSIGNMENT(partition_index=0, broker_ids=[5])]))
    assert result.error_code == ErrorCode.INVALID_REPLICATION_ASSIGNMENT


async def test_more_replicas_than_brokers_is_invalid_replication_factor() -> None:
    (result,) = await _create(make_world(), _topic("a", 1, 3))
    assert result.error_code == ErrorCode.INVALID_REPLICATION_FACTOR


async def test_delete_topics_by_name_and_by_id() -> None:
    world = make_world()
    world.cluster.create_topic("a", 1)
    b = world.cluster.create_topic("b", 1)
    old = await call(world, DELETE_TOPICS, 5, topic_names=["a", "missing"], timeout_ms=1000)
    assert [(r.name, r.error_code) for r in old.responses] == [
        ("a", 0), ("missing", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    new = await call(world, DELETE_TOPICS, 6, topics=[DELETABLE(name=None, topic_id=b.topic_id)], timeout_ms=1000)
    assert [(r.name, r.topic_id, r.error_code) for r in new.responses] == [("b", b.topic_id, 0)]
    assert world.cluster.topics == {}


async def test_create_partitions_grows_a_topic_and_refuses_to_shrink_it() -> None:
    world = make_world(brokers=2)
    world.cluster.create_topic("t", -1, -1, assignments={0: [0]})
    response = await call(world, CREATE_PARTITIONS, 3, timeout_ms=1000, validate_only=False, topics=[
        GROW(name="t", count=3, assignments=[GROW_ASSIGNMENT(broker_ids=[1]), GROW_ASSIGNMENT(broker_ids=[0])]),
        GROW(name="missing", count=2, assignments=None)])
    assert [(r.name, r.error_code) for r in response.results] == [
        ("t", 0), ("missing", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    assert [p.replicas for p in world.cluster.topics["t"].partitions] == [[0], [1], [0]]
    again = await call(world, CREATE_PARTITIONS, 3, timeout_ms=1000, validate_only=True,
                       topics=[GROW(name="t", count=3, assignments=None)])
    assert again.results[0].error_code == ErrorCode.INVALID_PARTITIONS


async def test_init_producer_id_hands_out_ids_in_blocks_per_broker() -> None:
    world = make_world(brokers=2)
    ids = []
    for broker in (0, 0, 1):
        response = await call(world, INIT_PRODUCER_ID, 4, broker, transactional_id=None,
                              transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1)
        ids.append((response.error_code, response.producer_id, response.producer_epoch))
    assert ids == [(0, 0, 0), (0, 1, 0), (0, 1000, 0)]


async def test_delete_topics_reports_a_duplicated_name_once() -> None:
    world = make_world()
    world.cluster.create_topic("a", 1)
    response = await call(world, DELETE_TOPICS, 5, topic_names=["a", "a"], timeout_ms=1000)
    assert [(r.name, r.error_code, r.error_message) for r in response.responses] == [
        ("a", ErrorCode.INVALID_REQUEST, "Duplicate topic name.")]
    assert "a" in world.cluster.topics


async def test_create_partitions_answers_duplicates_first_then_java_hash_set_order() -> None:
    # The order Kafka 4.4 answered this very request in (HashSet iteration, not request order).
    world = make_world()
    world.cluster.create_topic("dpc868", 1)
    response = await call(world, CREATE_PARTITIONS, 3, timeout_ms=1000, validate_only=True, topics=[
        GROW(name="dpc868", count=1, assignments=None), GROW(name="dpc868-v5", count=1, assignments=None),
        GROW(name="nope-dpc868", count=2, assignments=None), GROW(name="dpc868-v5", count=4, assignments=None)])
    assert [(r.name, r.error_code, r.error_message) for r in response.results] == [
        ("dpc868-v5", ErrorCode.INVALID_REQUEST, "Duplicate topic name."),
        ("nope-dpc868", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None),
        ("dpc868", ErrorCode.INVALID_PARTITIONS, "Topic already has 1 partition(s).")]


@pytest.mark.parametrize(("flavor", "count", "dynamic_default"), [
    (Flavor.KAFKA_4, 37, {"min.insync.replicas"}), (Flavor.KAFKA_3, 36, set())])
async def test_create_topics_echoes_the_config_table_of_the_flavors_kafka_line(
    flavor: Flavor, count: int, dynamic_default: set[str]
) -> None:
    (result,) = await _create(make_world(flavor=flavor), _topic("a", 1, 1), version=5)
    assert len(result.configs) == count
    assert [c.name for c in result.configs] == sorted(c.name for c in result.configs)
    assert {c.name for c in result.configs if c.config_source == 3} == dynamic_default


@pytest.mark.parametrize(("flavor", "suffix"), [
    (Flavor.KAFKA_4, " or some brokers have all their log directories cordoned."), (Flavor.KAFKA_3, ".")])
async def test_error_messages_are_the_kraft_controllers(flavor: Flavor, suffix: str) -> None:
    bad, too_many = await _create(make_world(flavor=flavor), _topic("bad name"), _topic("a", 1, 3))
    assert bad.error_message == ("Topic name is invalid: 'bad name' contains one or more characters other than "
                                 "ASCII alphanumerics, '.', '_' and '-'")
    assert too_many.error_message == ("Unable to replicate the partition 3 time(s): The target replication factor "
                                      "of 3 cannot be reached because only 1 broker(s) are registered" + suffix)
