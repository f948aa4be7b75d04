"""OffsetCommit, OffsetFetch and OffsetDelete over TCP (spec/coordinator.md §12, scenarios 62-68)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from rebalance_lab.clients.assignors.types import Subscription
from rebalance_lab.config import EmulatorConfig, Flavor, GroupConfig
from rebalance_lab.coordinator.routing import coordinator_for
from rebalance_lab.coordinator.server import EmulatorServer
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.consumer_protocol import encode_subscription
from rebalance_lab.protocol.errors import ErrorCode

from .wire import RawConnection

E = ErrorCode
COMMIT, FETCH, JOIN, SYNC, DESCRIBE, OFFSET_DELETE = 8, 9, 11, 14, 15, 47
GROUP = GroupConfig(initial_rebalance_delay_ms=0, min_session_timeout_ms=10, offsets_retention_minutes=1,
                    offsets_retention_check_interval_ms=1_000)


async def _server(flavor: Flavor = Flavor.KAFKA_4, brokers: int = 1) -> EmulatorServer:
    config = EmulatorConfig(port=0, manual_clock=True, group=GROUP, brokers=brokers, flavor=flavor,
                            topics=(("t", 3), ("u", 2)))
    return await EmulatorServer(config).start()


@pytest.fixture
async def server() -> AsyncIterator[EmulatorServer]:
    srv = await _server()
    yield srv
    await srv.stop()


async def _conn(server: EmulatorServer, broker: int = 0) -> RawConnection:
    info = server.world.cluster.brokers[broker]
    return await RawConnection.open(info.host, info.port)


def _commit_topics(version: int, parts: dict[str, list[tuple[int, int, str | None]]],
                   ids: dict[str, Any] | None = None) -> list[Any]:
    topic_cls = codec.request_type(COMMIT).OffsetCommitRequestTopic
    part_cls = topic_cls.OffsetCommitRequestPartition
    topics = []
    for name, entries in parts.items():
        key = {"topic_id": ids[name]} if ids is not None else {"name": name}
        topics.append(topic_cls(**key, partitions=[
            part_cls(partition_index=p, committed_offset=o, committed_metadata=m, committed_leader_epoch=7)
            for p, o, m in entries]))
    return topics


async def _commit(conn: RawConnection, version: int, parts: dict[str, list[tuple[int, int, str | None]]],
                  group: str = "g", generation: int = -1, member: str = "", **extra: Any) -> list[tuple[str, int, int]]:
    fields: dict[str, Any] = {"group_id": group, "generation_id_or_member_epoch": generation, "member_id": member,
                              "topics": _commit_topics(version, parts, extra.pop("ids", None)), **extra}
    response = await conn.request(COMMIT, version, **fields)
    return [(t.name if version < 10 else str(t.topic_id), p.partition_index, p.error_code)
            for t in response.topics for p in t.partitions]


def _fetch_topic(version: int, name: str, partitions: list[int]) -> Any:
    if version >= 8:
        cls = codec.request_type(FETCH).OffsetFetchRequestGroup.OffsetFetchRequestTopics
    else:
        cls = codec.request_type(FETCH).OffsetFetchRequestTopic
    return cls(name=name, partition_indexes=partitions)


async def _fetch(conn: RawConnection, version: int, topics: dict[str, list[int]] | None,
                 group: str = "g") -> tuple[int, list[tuple[str, int, int, int, str, int]]]:
    requested = None if topics is None else [_fetch_topic(version, n, ps) for n, ps in topics.items()]
    if version >= 8:
        group_cls = codec.request_type(FETCH).OffsetFetchRequestGroup
        response = await conn.request(FETCH, version, groups=[group_cls(group_id=group, topics=requested)])
        body = response.groups[0]
    else:
        response = await conn.request(FETCH, version, group_id=group, topics=requested)
        body = response
    rows = [(t.name, p.partition_index, p.committed_offset, getattr(p, "committed_leader_epoch", -1), p.metadata,
             p.error_code) for t in body.topics for p in t.partitions]
    return int(getattr(body, "error_code", 0)), rows


async def test_a_simple_consumer_commit_creates_an_empty_group_and_fetch_returns_it(server: EmulatorServer) -> None:
    conn = await _conn(server)
    assert await _commit(conn, 8, {"t": [(0, 42, "m")]}) == [("t", 0, E.NONE)]
    view = server.world.services["groups"].coordinator.group("g")
    assert view is not None and view.state == "Empty" and view.protocol_type is None
    assert await _fetch(conn, 8, {"t": [0]}) == (0, [("t", 0, 42, 7, "m", 0)])
    await conn.close()


@pytest.mark.parametrize(("flavor", "version", "expected"), [
    (Flavor.KAFKA_4, 8, E.ILLEGAL_GENERATION), (Flavor.KAFKA_4, 9, E.GROUP_ID_NOT_FOUND),
    (Flavor.KAFKA_3, 9, E.ILLEGAL_GENERATION),
])
async def test_a_commit_with_a_generation_to_an_unknown_group_fails_per_flavor_and_version(
    flavor: Flavor, version: int, expected: ErrorCode
) -> None:
    server = await _server(flavor)
    conn = await _conn(server)
    result = await _commit(conn, version, {"t": [(0, 1, None), (1, 1, None)]}, generation=3, member="m")
    assert result == [("t", 0, expected), ("t", 1, expected)]
    await conn.close()
    await server.stop()


async def test_metadata_over_the_limit_fails_only_that_partition(server: EmulatorServer) -> None:
    conn = await _conn(server)
    result = await _commit(conn, 8, {"t": [(0, 1, "x" * 4097), (1, 2, "x" * 4096)]})
    assert result == [("t", 0, E.OFFSET_METADATA_TOO_LARGE), ("t", 1, E.NONE)]
    await conn.close()


async def test_a_commit_for_only_unknown_topics_creates_no_group(server: EmulatorServer) -> None:
    conn = await _conn(server)
    result = await _commit(conn, 8, {"nope": [(0, 1, None)], "t": [(9, 1, None)]}, generation=5, member="m")
    assert result == [("nope", 0, E.UNKNOWN_TOPIC_OR_PARTITION), ("t", 9, E.UNKNOWN_TOPIC_OR_PARTITION)]
    assert server.world.services["groups"].coordinator.group("g") is None
    await conn.close()


@pytest.mark.parametrize("version", [1, 3, 5, 7, 8, 9])
async def test_fetching_from_an_unknown_group_is_no_error(server: EmulatorServer, version: int) -> None:
    conn = await _conn(server)
    error, rows = await _fetch(conn, version, {"t": [0, 2]}, group="unknown")
    epoch = -1
    assert (error, rows) == (0, [("t", 0, -1, epoch, "", 0), ("t", 2, -1, epoch, "", 0)])
    if version >= 2:
        assert await _fetch(conn, version, None, group="unknown") == (0, [])
    await conn.close()


async def test_all_topics_fetch_returns_every_committed_offset(server: EmulatorServer) -> None:
    conn = await _conn(server)
    await _commit(conn, 2, {"u": [(1, 11, None)], "t": [(2, 22, "a"), (0, 20, None)]}, retention_time_ms=-1)
    _error, rows = await _fetch(conn, 7, None)
    assert sorted(rows) == [("t", 0, 20, -1, "", 0), ("t", 2, 22, -1, "a", 0), ("u", 1, 11, -1, "", 0)]
    await conn.close()


async def test_commit_and_fetch_v10_name_topics_by_id(server: EmulatorServer) -> None:
    conn = await _conn(server)
    ids = {"t": server.world.cluster.topics["t"].topic_id}
    assert await _commit(conn, 10, {"t": [(1, 5, None)]}, ids=ids) == [(str(ids["t"]), 1, E.NONE)]
    assert await _fetch(conn, 8, {"t": [1]}) == (0, [("t", 1, 5, 7, "", 0)])
    await conn.close()


async def test_offsets_with_a_retention_time_expire_at_the_next_sweep(server: EmulatorServer) -> None:
    conn = await _conn(server)
    await _commit(conn, 2, {"t": [(0, 9, None)]}, retention_time_ms=500)
    server.advance(1_000)
    assert await _fetch(conn, 8, {"t": [0]}) == (0, [("t", 0, -1, -1, "", 0)])
    await conn.close()


async def test_a_simple_group_whose_offsets_expire_is_deleted(server: EmulatorServer) -> None:
    conn = await _conn(server)
    await _commit(conn, 8, {"t": [(0, 9, None)]})
    server.advance(59_000)
    assert (await _fetch(conn, 8, {"t": [0]}))[1][0][2] == 9
    server.advance(2_000)
    assert (await _fetch(conn, 8, {"t": [0]}))[1][0][2] == -1
    assert server.world.services["groups"].coordinator.group("g") is None
    await conn.close()


async def test_offset_delete_needs_a_known_group_and_removes_offsets_of_an_empty_one(server: EmulatorServer) -> None:
    conn = await _conn(server)
    topic_cls = codec.request_type(OFFSET_DELETE).OffsetDeleteRequestTopic
    part_cls = topic_cls.OffsetDeleteRequestPartition
    topics = [topic_cls(name="t", partitions=[part_cls(partition_index=0)])]
    missing = await conn.request(OFFSET_DELETE, 0, group_id="g", topics=topics)
    assert missing.error_code == E.GROUP_ID_NOT_FOUND
    await _commit(conn, 8, {"t": [(0, 3, None)]})
    deleted = await conn.request(OFFSET_DELETE, 0, group_id="g", topics=topics)
    assert deleted.error_code == 0 and deleted.topics[0].partitions[0].error_code == 0
    assert await _fetch(conn, 8, {"t": [0]}) == (0, [("t", 0, -1, -1, "", 0)])
    await conn.close()


async def _stable_consumer_group(conn: RawConnection, topics: tuple[str, ...]) -> tuple[str, int]:
    proto = codec.data_class(codec.request_type(JOIN), "JoinGroupRequestProtocol")
    metadata = encode_subscription(Subscription(topics=topics))
    fields = dict(group_id="g", session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
                  protocol_type="consumer", protocols=[proto(name="range", metadata=metadata)])
    first = await conn.request(JOIN, 5, member_id="", group_instance_id=None, **fields)
    joined = await conn.request(JOIN, 5, member_id=first.member_id, group_instance_id=None, **fields)
    assert joined.error_code == 0
    synced = await conn.request(SYNC, 3, group_id="g", generation_id=joined.generation_id,
                                member_id=joined.member_id, group_instance_id=None, assignments=[])
    assert synced.error_code == 0
    return joined.member_id, joined.generation_id


async def test_offset_delete_refuses_topics_a_stable_consumer_group_subscribes_to(server: EmulatorServer) -> None:
    conn = await _conn(server)
    member, generation = await _stable_consumer_group(conn, ("t",))
    assert await _commit(conn, 8, {"t": [(0, 3, None)], "u": [(0, 4, None)]}, generation=generation,
                         member=member) == [("t", 0, 0), ("u", 0, 0)]
    topic_cls = codec.request_type(OFFSET_DELETE).OffsetDeleteRequestTopic
    part_cls = topic_cls.OffsetDeleteRequestPartition
    response = await conn.request(OFFSET_DELETE, 0, group_id="g", topics=[
        topic_cls(name="t", partitions=[part_cls(partition_index=0)]),
        topic_cls(name="u", partitions=[part_cls(partition_index=0)])])
    assert [(t.name, t.partitions[0].error_code) for t in response.topics] == [
        ("t", E.GROUP_SUBSCRIBED_TO_TOPIC), ("u", E.NONE)]
    await conn.close()


async def test_commits_check_the_member_and_generation_of_a_live_group(server: EmulatorServer) -> None:
    conn = await _conn(server)
    member, generation = await _stable_consumer_group(conn, ("t",))
    assert await _commit(conn, 8, {"t": [(0, 1, None)]}, generation=generation - 1, member=member) == [
        ("t", 0, E.ILLEGAL_GENERATION)]
    assert await _commit(conn, 8, {"t": [(0, 1, None)]}, generation=generation, member="stranger") == [
        ("t", 0, E.UNKNOWN_MEMBER_ID)]
    assert await _commit(conn, 8, {"t": [(0, 1, None)]}) == [("t", 0, E.UNKNOWN_MEMBER_ID)]
    assert await _commit(conn, 8, {"t": [(0, 1, None)]}, generation=generation, member=member) == [
        ("t", 0, E.NONE)]
    await conn.close()


async def test_offset_requests_to_a_broker_that_is_not_the_coordinator_get_not_coordinator() -> None:
    server = await _server(brokers=3)
    coordinator = coordinator_for(server.world, "g").node_id
    other = next(b for b in range(3) if b != coordinator)
    conn = await _conn(server, other)
    assert await _commit(conn, 8, {"t": [(0, 1, None)]}) == [("t", 0, E.NOT_COORDINATOR)]
    assert (await _fetch(conn, 8, {"t": [0]}))[0] == E.NOT_COORDINATOR
    assert (await _fetch(conn, 5, {"t": [0]}))[0] == E.NOT_COORDINATOR
    await conn.close()
    await server.stop()
