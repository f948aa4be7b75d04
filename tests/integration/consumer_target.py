"""A KIP-848 consumer group driven over raw TCP, against the emulator or a real Kafka 4.4.0 broker.

:class:`Target` hides which one answers: the same test runs on both, so the expectations are the
broker's. The emulator runs on a manual clock and :meth:`Target.wait_ms` advances it; the broker
really waits (its ``group.consumer.assignment.interval.ms``, 1 s by default in 4.4, only lets a
new target assignment be computed a second after the last one).

:class:`Member` is one consumer-protocol member speaking ConsumerGroupHeartbeat v1 with a
client-chosen member id (KIP-1082), remembering its epoch and the partitions it was given.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

from rebalance_lab.config import ConsumerGroupConfig, EmulatorConfig, Flavor, GroupConfig
from rebalance_lab.coordinator.server import EmulatorServer
from rebalance_lab.protocol import codec

from .wire import RawConnection

HEARTBEAT, COMMIT, FETCH, METADATA, CREATE_TOPICS, FIND_COORDINATOR = 68, 8, 9, 3, 19, 10
TOPICS = {"surface-t": 3, "surface-u": 2}
TOPIC, OTHER = "surface-t", "surface-u"  # OTHER: a topic the tests' members never subscribe to
ASSIGNMENT_INTERVAL_MS = 1_000  # Kafka 4.4.0's default group.consumer.assignment.interval.ms
START_MS = 3_600_000


@dataclass
class Target:
    name: str
    host: str
    port: int
    topic_ids: dict[str, uuid.UUID] = field(default_factory=dict)
    server: EmulatorServer | None = None

    async def connect(self) -> RawConnection:
        return await RawConnection.open(self.host, self.port)

    async def wait_ms(self, ms: int) -> None:
        """Let ``ms`` pass: the emulator's manual clock moves at once, the broker's clock really."""
        if self.server is not None:
            self.server.advance(ms)
        else:
            await asyncio.sleep(ms / 1000)

    def new_group_id(self) -> str:
        """Group ids never repeat: the real broker is shared by the whole test session."""
        return f"surface-{uuid.uuid4().hex[:10]}"


# The ``params`` of a fixture whose tests run on both: the emulator always, the real broker when ``-m broker``.
TARGETS = ["emulator", pytest.param("real-kafka-4", marks=pytest.mark.broker)]


@asynccontextmanager
async def target_for(request: pytest.FixtureRequest, group: GroupConfig | None = None,
                     consumer_group: ConsumerGroupConfig | None = None,
                     broker_settings: dict[str, Any] | None = None) -> AsyncIterator[Target]:
    """The target a ``TARGETS`` fixture's param names. The emulator takes ``group``/``consumer_group``; the broker
    is the session's default Kafka 4.4.0 one, or (with ``broker_settings``, the same settings in broker
    property names) one started with those."""
    if request.param == "emulator":
        async with emulator_target(group, consumer_group) as emulator:
            yield emulator
        return
    if broker_settings is None:
        broker = request.getfixturevalue("kafka_broker_4")
    else:
        broker = request.getfixturevalue("kafka_brokers").get("4", broker_settings)
    yield await broker_target(broker.bootstrap)


@asynccontextmanager
async def emulator_target(group: GroupConfig | None = None,
                          consumer_group: ConsumerGroupConfig | None = None) -> AsyncIterator[Target]:
    config = EmulatorConfig(port=0, manual_clock=True, flavor=Flavor.KAFKA_4,
                            group=group or GroupConfig(initial_rebalance_delay_ms=0), topics=tuple(TOPICS.items()),
                            consumer_group=consumer_group or ConsumerGroupConfig())
    async with EmulatorServer(config) as server:
        server.advance(START_MS)  # a broker's clock is never 0 (Kafka's assignment timestamp 0 means "never")
        info = server.world.cluster.brokers[0]
        target = Target("emulator", info.host, info.port, server=server)
        target.topic_ids = await _topic_ids(target)
        yield target


async def broker_target(bootstrap: str) -> Target:
    host, port = bootstrap.rsplit(":", 1)
    target = Target("real-kafka-4", host, int(port))
    await _create_topics(target)
    target.topic_ids = await _topic_ids(target)
    await _wait_for_group_coordinator(target)
    return target


async def _wait_for_group_coordinator(target: Target) -> None:
    """Metadata may show a new topic before the group coordinator's image has it (a member would then be
    assigned nothing): probe with a throwaway consumer group until a member gets every partition."""
    every = {(name, p) for name, count in TOPICS.items() for p in range(count)}
    for _ in range(100):
        probe = await Member.join(target, target.new_group_id(), "probe", list(TOPICS))
        got = probe.partitions()
        await probe.leave()
        if got == every:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"the group coordinator of {target.name} never saw the topics {sorted(TOPICS)}")


async def _create_topics(target: Target) -> None:
    conn = await target.connect()
    topic_cls = codec.request_type(CREATE_TOPICS).CreatableTopic
    topics = [topic_cls(name=n, num_partitions=p, replication_factor=1, assignments=[], configs=[])
              for n, p in TOPICS.items()]
    response = await conn.request(CREATE_TOPICS, 5, topics=topics, timeout_ms=10_000, validate_only=False)
    assert {t.error_code for t in response.topics} <= {0, 36}, response  # 36: created by an earlier test
    await conn.close()


async def _topic_ids(target: Target) -> dict[str, uuid.UUID]:
    """The topics' ids once every partition has a leader (a new topic is not usable at once)."""
    conn = await target.connect()
    topic_cls = codec.request_type(METADATA).MetadataRequestTopic
    try:
        for _ in range(100):
            response = await conn.request(METADATA, 12, topics=[topic_cls(name=n, topic_id=uuid.UUID(int=0))
                                                                for n in TOPICS],
                                          allow_auto_topic_creation=False, include_topic_authorized_operations=False)
            ready = {t.name: t.topic_id for t in response.topics
                     if t.error_code == 0 and len(t.partitions) == TOPICS[t.name]
                     and all(p.leader_id >= 0 for p in t.partitions)}
            if len(ready) == len(TOPICS):
                return ready
            await asyncio.sleep(0.1)
        raise AssertionError(f"topics not ready on {target.name}: {response}")
    finally:
        await conn.close()


class Member:
    """One consumer-protocol member (ConsumerGroupHeartbeat v1) with its own connection."""

    def __init__(self, target: Target, conn: RawConnection, group_id: str, member_id: str) -> None:
        self.target = target
        self.conn = conn
        self.group_id = group_id
        self.member_id = member_id
        self.epoch = 0
        self.assigned: dict[str, set[int]] = {}
        self._names = {v: k for k, v in target.topic_ids.items()}

    @classmethod
    async def join(cls, target: Target, group_id: str, member_id: str, topics: list[str]) -> Member:
        member = cls(target, await target.connect(), group_id, member_id)
        response = await member.heartbeat(epoch=0, rebalance_timeout_ms=30_000, subscribed_topic_names=topics,
                                          topic_partitions=[])
        assert response.error_code == 0, response
        return member

    async def heartbeat(self, epoch: int | None = None, **fields: Any) -> Any:
        body: dict[str, Any] = dict(group_id=self.group_id, member_id=self.member_id,
                                    member_epoch=self.epoch if epoch is None else epoch, instance_id=None,
                                    rack_id=None, rebalance_timeout_ms=-1, subscribed_topic_names=None,
                                    subscribed_topic_regex=None, server_assignor=None, topic_partitions=None)
        body.update(fields)
        response = await self.conn.request(HEARTBEAT, 1, **body)
        if response.error_code == 0:
            self.epoch = response.member_epoch
            if response.assignment is not None:
                self.assigned = {}
                for tp in response.assignment.topic_partitions:
                    self.assigned.setdefault(self._names[tp.topic_id], set()).update(tp.partitions)
        return response

    async def acknowledge(self) -> Any:
        """Tell the coordinator the member owns exactly what it was last given (revocations done)."""
        tp_cls = codec.request_type(HEARTBEAT).TopicPartitions
        owned = [tp_cls(topic_id=self.target.topic_ids[name], partitions=sorted(parts))
                 for name, parts in self.assigned.items() if parts]
        return await self.heartbeat(topic_partitions=owned)

    def partitions(self) -> set[tuple[str, int]]:
        return {(name, p) for name, parts in self.assigned.items() for p in parts}

    async def leave(self) -> None:
        await self.heartbeat(epoch=-1)
        await self.conn.close()


async def commit_topics(conn: RawConnection, version: int, group_id: str, epoch: int, member_id: str,
                        offsets: list[tuple[str, list[int]]], ids: dict[str, uuid.UUID], *,
                        metadata: str | dict[int, str] = "", instance_id: str | None = None
                        ) -> list[tuple[str, int, int]]:
    """OffsetCommit of offset 7 for each partition, with topics as listed (a topic may repeat; ``metadata``: for
    all, or by partition index); answers (topic, partition, error) as they come."""
    def metadata_of(p: int) -> str:
        return metadata if isinstance(metadata, str) else metadata.get(p, "")

    topic_cls = codec.request_type(COMMIT).OffsetCommitRequestTopic
    part_cls = topic_cls.OffsetCommitRequestPartition
    topics = [topic_cls(**({"topic_id": ids[name]} if version >= 10 else {"name": name}),
                        partitions=[part_cls(partition_index=p, committed_offset=7, committed_metadata=metadata_of(p),
                                             committed_leader_epoch=-1) for p in parts])
              for name, parts in offsets]
    response = await conn.request(COMMIT, version, group_id=group_id, generation_id_or_member_epoch=epoch,
                                  member_id=member_id, group_instance_id=instance_id, topics=topics)
    names = {v: k for k, v in ids.items()}
    return [(t.name if version < 10 else names[t.topic_id], p.partition_index, p.error_code)
            for t in response.topics for p in t.partitions]


async def commit(conn: RawConnection, version: int, group_id: str, epoch: int, member_id: str,
                 offsets: dict[str, list[int]], ids: dict[str, uuid.UUID], *, metadata: str | dict[int, str] = "",
                 instance_id: str | None = None) -> list[tuple[str, int, int]]:
    """:func:`commit_topics` of one entry per topic."""
    return await commit_topics(conn, version, group_id, epoch, member_id, list(offsets.items()), ids,
                               metadata=metadata, instance_id=instance_id)


async def fetch(conn: RawConnection, version: int, group_id: str, member_id: str | None, epoch: int,
                topics: dict[str, list[int]] | None) -> tuple[int, list[tuple[str, int, int]]]:
    """OffsetFetch v8+ of one group: (group error, [(topic, partition, committed offset)])."""
    group_cls = codec.request_type(FETCH).OffsetFetchRequestGroup
    topic_cls = group_cls.OffsetFetchRequestTopics
    requested = None if topics is None else [topic_cls(name=n, partition_indexes=ps) for n, ps in topics.items()]
    fields: dict[str, Any] = {"member_id": member_id, "member_epoch": epoch} if version >= 9 else {}
    response = await conn.request(FETCH, version, require_stable=False,
                                  groups=[group_cls(group_id=group_id, topics=requested, **fields)])
    group = response.groups[0]
    return group.error_code, [(t.name, p.partition_index, p.committed_offset) for t in group.topics
                              for p in t.partitions]
