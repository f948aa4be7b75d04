"""Metadata across versions: which topics, auto-creation, live brokers and leaders."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from rebalance_lab.protocol.errors import ErrorCode, KafkaError
from tests.unit.dataplane.harness import call, make_world, request_class

METADATA = 3
TOPIC = request_class(METADATA, "MetadataRequestTopic")


def _names(response: Any) -> list[str]:
    return [t.name for t in response.topics]


async def test_v0_empty_topic_list_means_all_topics() -> None:
    world = make_world()
    world.cluster.create_topic("a", 1)
    world.cluster.create_topic("b", 2)
    assert sorted(_names(await call(world, METADATA, 0, topics=[]))) == ["a", "b"]


@pytest.mark.parametrize("version", [1, 4, 9, 12, 13])
async def test_v1_and_later_null_means_all_and_empty_means_none(version: int) -> None:
    world = make_world()
    world.cluster.create_topic("a", 1)
    assert _names(await call(world, METADATA, version, topics=None)) == ["a"]
    assert _names(await call(world, METADATA, version, topics=[])) == []


async def test_a_topic_is_described_with_partitions_replicas_isr_and_topic_id() -> None:
    world = make_world(brokers=3, racks=("r0", "r1", "r2"))
    info = world.cluster.create_topic("a", 3, 2)
    response = await call(world, METADATA, 12, topics=[TOPIC(name="a")])
    assert [(b.node_id, b.rack) for b in response.brokers] == [(0, "r0"), (1, "r1"), (2, "r2")]
    assert response.cluster_id == "rebalance-lab-cluster" and response.controller_id == 0
    topic = response.topics[0]
    assert (topic.error_code, topic.topic_id, topic.is_internal) == (0, info.topic_id, False)
    for p, expected in zip(topic.partitions, info.partitions, strict=True):
        assert (p.leader_id, p.leader_epoch, p.replica_nodes, p.isr_nodes, p.offline_replicas) == (
            expected.replicas[0], 0, expected.replicas, expected.replicas, [])


async def test_an_unknown_topic_is_created_and_first_answered_unknown_as_kraft_does() -> None:
    world = make_world(num_partitions=3)
    first = await call(world, METADATA, 12, topics=[TOPIC(name="new")], allow_auto_topic_creation=True)
    assert [(t.name, t.error_code, t.partitions) for t in first.topics] == [
        ("new", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])]
    second = await call(world, METADATA, 12, topics=[TOPIC(name="new")], allow_auto_topic_creation=True)
    assert second.topics[0].error_code == 0 and len(second.topics[0].partitions) == 3


async def test_no_auto_creation_when_the_request_disallows_it() -> None:
    world = make_world()
    response = await call(world, METADATA, 4, topics=[TOPIC(name="new")], allow_auto_topic_creation=False)
    assert response.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert "new" not in world.cluster.topics


async def test_no_auto_creation_when_the_emulator_disables_it() -> None:
    world = make_world(auto_create_topics=False)
    await call(world, METADATA, 1, topics=[TOPIC(name="new")])
    assert "new" not in world.cluster.topics


async def test_versions_before_4_always_ask_for_auto_creation() -> None:
    world = make_world()
    await call(world, METADATA, 3, topics=[TOPIC(name="new")])
    assert "new" in world.cluster.topics


async def test_an_illegal_topic_name_is_invalid_topic_exception() -> None:
    response = await call(make_world(), METADATA, 9, topics=[TOPIC(name="bad name!")])
    assert response.topics[0].error_code == ErrorCode.INVALID_TOPIC


async def test_v12_finds_a_topic_by_id_and_answers_unknown_ids() -> None:
    world = make_world()
    info = world.cluster.create_topic("a", 1)
    unknown = uuid.uuid4()
    response = await call(world, METADATA, 12, topics=[TOPIC(name=None, topic_id=info.topic_id),
                                                       TOPIC(name=None, topic_id=unknown)])
    assert [(t.name, t.error_code) for t in response.topics] == [("a", 0), (None, ErrorCode.UNKNOWN_TOPIC_ID)]


async def test_v10_with_a_topic_id_is_an_invalid_request() -> None:
    with pytest.raises(KafkaError) as info:
        await call(make_world(), METADATA, 10, topics=[TOPIC(name="a", topic_id=uuid.uuid4())])
    assert info.value.code == ErrorCode.INVALID_REQUEST


async def test_a_down_broker_is_not_listed_and_its_partitions_are_leaderless() -> None:
    world = make_world(brokers=2)
    world.cluster.create_topic("a", -1, -1, assignments={0: [0], 1: [1]})
    world.nodes[1].up = False
    response = await call(world, METADATA, 9, topics=None)
    assert [b.node_id for b in response.brokers] == [0]
    by_index = {p.partition_index: p for p in response.topics[0].partitions}
    assert (by_index[0].error_code, by_index[0].leader_id) == (0, 0)
    assert (by_index[1].error_code, by_index[1].leader_id, by_index[1].offline_replicas) == (
        ErrorCode.LEADER_NOT_AVAILABLE, -1, [1])


async def test_a_fenced_leader_hands_leadership_to_the_next_isr_replica_with_a_new_epoch() -> None:
    world = make_world(brokers=2)
    world.cluster.create_topic("a", -1, -1, assignments={0: [0, 1]})  # broker 0 leads, whatever the placer
    world.cluster.broker_stopped(0)
    world.nodes[0].up = False
    p = (await call(world, METADATA, 9, topics=None)).topics[0].partitions[0]
    assert (p.leader_id, p.leader_epoch, p.isr_nodes, p.offline_replicas) == (1, 1, [1], [0])


async def test_authorized_operations_are_all_allowed_when_asked_for() -> None:
    world = make_world()
    world.cluster.create_topic("a", 1)
    asked = await call(world, METADATA, 10, topics=None, include_topic_authorized_operations=True,
                       include_cluster_authorized_operations=True)
    assert asked.topics[0].authorized_operations == {3, 4, 5, 6, 7, 8, 10, 11}
    assert asked.authorized_operations == {5, 7, 8, 9, 10, 11, 12}
    plain = await call(world, METADATA, 10, topics=None)
    assert plain.topics[0].authorized_operations is None
