"""KIP-848 over real TCP: ConsumerGroupHeartbeat/Describe through the codec against an in-process emulator."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from rebalance_lab.config import EmulatorConfig, Flavor
from rebalance_lab.coordinator.server import EmulatorServer
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode

from .wire import RawConnection

HEARTBEAT, DESCRIBE, API_VERSIONS = 68, 69, 18


@pytest.fixture
async def server() -> AsyncIterator[EmulatorServer]:
    config = EmulatorConfig(port=0, manual_clock=True, seed=3, topics=(("foo", 6),))
    async with EmulatorServer(config) as srv:
        yield srv


async def connect(server: EmulatorServer) -> RawConnection:
    broker = server.world.cluster.live_brokers()[0]
    return await RawConnection.open(broker.host, broker.port)


def owned(topic_id: uuid.UUID, *partitions: int) -> list[Any]:
    tp = codec.data_class(codec.request_type(HEARTBEAT), "TopicPartitions")
    return [tp(topic_id=topic_id, partitions=list(partitions))]


def assigned(response: Any) -> set[int] | None:
    if response.assignment is None:
        return None
    return {p for tp in response.assignment.topic_partitions for p in tp.partitions}


async def join(conn: RawConnection, member_id: str) -> Any:
    return await conn.request(HEARTBEAT, 1, group_id="g", member_id=member_id, member_epoch=0,
                              rebalance_timeout_ms=300_000, subscribed_topic_names=["foo"], topic_partitions=[])


async def test_two_members_join_heartbeat_revoke_and_reconcile_over_tcp(server: EmulatorServer) -> None:
    foo = server.world.cluster.topics["foo"].topic_id
    conn = await connect(server)
    first = await join(conn, "A")
    assert (first.error_code, first.member_id, first.member_epoch, first.heartbeat_interval_ms) == (0, "A", 2, 5000)
    assert assigned(first) == {0, 1, 2, 3, 4, 5}
    server.world.clock.advance(2_000)  # past the 4.4 assignment interval (1 s)
    second = await join(conn, "B")
    assert (second.member_epoch, assigned(second)) == (3, set())  # 4.4: a new group starts at epoch 1
    revoking = await conn.request(HEARTBEAT, 1, group_id="g", member_id="A", member_epoch=2,
                                  topic_partitions=owned(foo, 0, 1, 2, 3, 4, 5))
    assert (revoking.member_epoch, assigned(revoking)) == (2, {0, 1, 2})
    acked = await conn.request(HEARTBEAT, 1, group_id="g", member_id="A", member_epoch=2,
                               topic_partitions=owned(foo, 0, 1, 2))
    assert (acked.member_epoch, acked.assignment) == (3, None)
    released = await conn.request(HEARTBEAT, 1, group_id="g", member_id="B", member_epoch=3)
    assert (released.member_epoch, assigned(released)) == (3, {3, 4, 5})
    described = await conn.request(DESCRIBE, 1, group_ids=["g", "nope"])
    group, missing = described.groups
    assert (group.group_state, group.group_epoch, group.assignment_epoch, group.assignor_name) == (
        "Stable", 3, 3, "uniform")
    members = {m.member_id: m for m in group.members}
    assert {p for tp in members["B"].assignment.topic_partitions for p in tp.partitions} == {3, 4, 5}
    assert members["A"].member_type == 1 and members["A"].client_id == "raw"
    assert (missing.error_code, missing.error_message) == (ErrorCode.GROUP_ID_NOT_FOUND, "Group nope not found.")
    await conn.close()


async def test_an_invalid_heartbeat_gets_invalid_request_with_kafkas_message(server: EmulatorServer) -> None:
    conn = await connect(server)
    response = await conn.request(HEARTBEAT, 1, group_id="g", member_id="A", member_epoch=0,
                                  subscribed_topic_names=["foo"], topic_partitions=[])
    assert (response.error_code, response.error_message) == (
        ErrorCode.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request.")
    assert (response.member_id, response.member_epoch, response.assignment) == (None, 0, None)
    await conn.close()


async def test_a_v0_join_gets_a_22_character_member_id(server: EmulatorServer) -> None:
    conn = await connect(server)
    response = await conn.request(HEARTBEAT, 0, group_id="g", member_id="", member_epoch=0,
                                  rebalance_timeout_ms=300_000, subscribed_topic_names=["foo"], topic_partitions=[])
    assert response.error_code == 0 and len(response.member_id) == 22
    await conn.close()


async def test_kafka_3_advertises_v0_and_answers_unsupported_version_as_a_default_3_9_broker() -> None:
    """A default 3.9.2 broker (helper "scenarios"): 68 and 69 advertised at 0-0, the consumer protocol off."""
    async with EmulatorServer(EmulatorConfig(port=0, flavor=Flavor.KAFKA_3, api_versions="kafka-3")) as srv:
        conn = await connect(srv)
        versions = await conn.request(API_VERSIONS, 3, client_software_name="t", client_software_version="1")
        keys = {k.api_key: (k.min_version, k.max_version) for k in versions.api_keys}
        assert (keys.get(HEARTBEAT), keys.get(DESCRIBE)) == ((0, 0), (0, 0))
        response = await conn.request(HEARTBEAT, 0, group_id="g", member_id="", member_epoch=0,
                                      rebalance_timeout_ms=300_000, subscribed_topic_names=["foo"],
                                      topic_partitions=[])
        assert (response.error_code, response.member_id) == (ErrorCode.UNSUPPORTED_VERSION, None)
        described = await conn.request(DESCRIBE, 0, group_ids=["g"])
        (group,) = described.groups
        assert (group.error_code, group.error_message, group.group_id, group.group_state, group.members) == (
            ErrorCode.UNSUPPORTED_VERSION, None, "g", "", [])
        await conn.close()


async def test_kafka_4_advertises_both_apis_at_v0_to_v1() -> None:
    async with EmulatorServer(EmulatorConfig(port=0, api_versions="kafka-4")) as srv:
        conn = await connect(srv)
        versions = await conn.request(API_VERSIONS, 3, client_software_name="t", client_software_version="1")
        keys = {k.api_key: (k.min_version, k.max_version) for k in versions.api_keys}
        assert (keys.get(HEARTBEAT), keys.get(DESCRIBE)) == ((0, 1), (0, 1))
        await conn.close()


async def test_describe_answers_an_empty_group_id_invalid_group_id_first(server: EmulatorServer) -> None:
    """``GroupCoordinatorService.consumerGroupDescribe``: the empty id is answered before the shards' results."""
    conn = await connect(server)
    await join(conn, "A")
    described = await conn.request(DESCRIBE, 1, group_ids=["g", ""])
    empty, group = described.groups
    assert (empty.group_id, empty.error_code, empty.error_message) == ("", ErrorCode.INVALID_GROUP_ID, None)
    assert (group.group_id, group.error_code) == ("g", ErrorCode.NONE)
    await conn.close()


async def test_a_damaged_heartbeat_closes_only_its_connection_and_changes_nothing_in_the_group(
        server: EmulatorServer) -> None:
    """Kafka cannot parse it, so it closes that connection (``InvalidRequestException``); the group is untouched."""
    foo = server.world.cluster.topics["foo"].topic_id
    member = await connect(server)
    joined = await join(member, "A")
    before = server.world.services["groups"].consumer.group("g")
    request = codec.new_request(HEARTBEAT, 1, group_id="g", member_id="A", member_epoch=joined.member_epoch,
                                rebalance_timeout_ms=300_000, subscribed_topic_names=["foo", "bar"],
                                topic_partitions=owned(foo, 0, 1, 2, 3, 4, 5))
    frame = codec.encode_request(request, correlation_id=9, client_id="raw")
    damaged = frame[:4 + 14] + b"\xff" * 6  # the header, then a group id whose length runs past the frame
    damaged = len(damaged[4:]).to_bytes(4, "big") + damaged[4:]
    other = await connect(server)
    await other.send_raw(damaged)
    assert await other.is_closed_by_peer()
    assert server.world.services["groups"].consumer.group("g") == before
    again = await member.request(HEARTBEAT, 1, group_id="g", member_id="A", member_epoch=joined.member_epoch)
    assert (again.error_code, again.member_epoch) == (0, joined.member_epoch)
    await member.close()
