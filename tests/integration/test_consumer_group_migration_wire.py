"""Online migration over TCP (spec/kip848.md §7, §10 #40-#41), as Kafka 4.4.0 runs it.

Every test runs against the emulator (kafka-4, manual clock) and against a real Kafka 4.4.0 broker
(``kafka_broker_4``), so each expectation is the broker's answer. A classic member speaks JoinGroup v9 /
SyncGroup v5 / Heartbeat v4 / LeaveGroup v5 with the embedded consumer protocol; a consumer-protocol
member speaks ConsumerGroupHeartbeat v1 (``consumer_target.Member``). Member ids the coordinator
generates differ between the targets, so tests compare their shapes and the partitions as sets.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from typing import Any

import pytest

from rebalance_lab.clients.assignors.types import Assignment, Subscription, TopicPartition
from rebalance_lab.config import ConsumerGroupConfig
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.consumer_protocol import decode_assignment, encode_assignment, encode_subscription
from rebalance_lab.protocol.errors import ErrorCode

from .consumer_target import TARGETS, TOPIC, TOPICS, Member, Target, commit, target_for
from .wire import RawConnection

E = ErrorCode
JOIN, HEARTBEAT, LEAVE, SYNC, DESCRIBE, CG_DESCRIBE = 11, 12, 13, 14, 15, 69
ALL = set(range(TOPICS[TOPIC]))


@pytest.fixture(params=TARGETS)
async def target(request: pytest.FixtureRequest) -> AsyncIterator[Target]:
    async with target_for(request) as found:
        yield found


@pytest.fixture(params=TARGETS)
async def no_migration(request: pytest.FixtureRequest) -> AsyncIterator[Target]:
    """A target with ``group.consumer.migration.policy=disabled``."""
    async with target_for(request, consumer_group=ConsumerGroupConfig(migration_policy="disabled"),
                          broker_settings={"group.consumer.migration.policy": "disabled"}) as found:
        yield found


def subscription(owned: Iterable[int] = ()) -> bytes:
    tps = tuple(TopicPartition(TOPIC, p) for p in owned)
    return encode_subscription(Subscription(topics=(TOPIC,), owned_partitions=tps), 3)


def assigned(raw: bytes) -> set[int]:
    return {tp.partition for tp in decode_assignment(raw).partitions} if raw else set()


@dataclass
class Classic:
    """One classic-protocol consumer on its own connection."""

    conn: RawConnection
    group_id: str
    member_id: str = ""
    generation: int = -1
    instance: str | None = None

    @classmethod
    async def connect(cls, target: Target, group_id: str) -> Classic:
        return cls(await target.connect(), group_id)

    async def join(self, *, names: tuple[str, ...] = ("range",), owned: Iterable[int] = (),
                   protocol_type: str = "consumer", metadata: bytes | None = None, version: int = 9) -> Any:
        proto = codec.data_class(codec.request_type(JOIN), "JoinGroupRequestProtocol")
        meta = subscription(owned) if metadata is None else metadata
        fields: dict[str, Any] = dict(group_id=self.group_id, session_timeout_ms=30_000, rebalance_timeout_ms=30_000,
                                      member_id=self.member_id, protocol_type=protocol_type,
                                      protocols=[proto(name=n, metadata=meta) for n in names])
        if version >= 5:
            fields["group_instance_id"] = self.instance
        response = await self.conn.request(JOIN, version, client_id="classic", **fields)
        if response.error_code in (0, E.MEMBER_ID_REQUIRED):
            self.member_id = response.member_id
        if response.error_code == 0:
            self.generation = response.generation_id
        return response

    async def join_two_step(self, **kw: Any) -> Any:
        first = await self.join(**kw)
        assert first.error_code == E.MEMBER_ID_REQUIRED, first
        return await self.join(**kw)

    async def sync(self, assignments: dict[str, bytes] | None = None, protocol_name: str = "range",
                   generation: int | None = None) -> Any:
        item = codec.data_class(codec.request_type(SYNC), "SyncGroupRequestAssignment")
        return await self.conn.request(
            SYNC, 5, client_id="classic", group_id=self.group_id, member_id=self.member_id,
            generation_id=self.generation if generation is None else generation, group_instance_id=self.instance,
            protocol_type="consumer", protocol_name=protocol_name,
            assignments=[item(member_id=m, assignment=a) for m, a in (assignments or {}).items()])

    async def heartbeat(self) -> int:
        response = await self.conn.request(HEARTBEAT, 4, client_id="classic", group_id=self.group_id,
                                           generation_id=self.generation, member_id=self.member_id,
                                           group_instance_id=self.instance)
        return int(response.error_code)

    async def leave(self, *member_ids: str) -> Any:
        identity = codec.data_class(codec.request_type(LEAVE), "MemberIdentity")
        return await self.conn.request(LEAVE, 5, client_id="classic", group_id=self.group_id,
                                       members=[identity(member_id=m, group_instance_id=None, reason=None)
                                                for m in member_ids or (self.member_id,)])

    async def stable(self, parts: Iterable[int] = ALL, **kw: Any) -> None:
        """The group's only member, Stable at generation 1, owning ``parts``."""
        joined = await self.join_two_step(**kw)
        assert (joined.error_code, joined.generation_id) == (0, 1), joined
        raw = encode_assignment(Assignment(partitions=tuple(TopicPartition(TOPIC, p) for p in parts)), 3)
        synced = await self.sync({self.member_id: raw}, protocol_name=joined.protocol_name)
        assert synced.error_code == 0, synced


async def cg_describe(conn: RawConnection, group_id: str) -> Any:
    response = await conn.request(CG_DESCRIBE, 1, group_ids=[group_id], include_authorized_operations=False)
    return response.groups[0]


async def describe(conn: RawConnection, group_id: str) -> Any:
    response = await conn.request(DESCRIBE, 5, groups=[group_id], include_authorized_operations=False)
    return response.groups[0]


async def upgraded(target: Target) -> tuple[Classic, Member]:
    """#40: classic C owns every partition at generation 1; A joins with the consumer protocol."""
    c = await Classic.connect(target, target.new_group_id())
    await c.stable()
    a = await Member.join(target, c.group_id, "A", [TOPIC])
    return c, a


async def converged(target: Target) -> tuple[Classic, Member]:
    """#40 converged: C rejoined (eager) and synced, A got the rest."""
    c, a = await upgraded(target)
    assert await c.heartbeat() == E.REBALANCE_IN_PROGRESS
    await c.join()
    synced = await c.sync()
    await a.heartbeat()
    assert assigned(synced.assignment) | {p for _, p in a.partitions()} == ALL
    return c, a


async def test_a_consumer_member_upgrades_a_live_classic_group(target: Target) -> None:  # spec §10 #40
    c, a = await upgraded(target)
    assert (a.epoch, a.partitions()) == (2, set())  # its target is still owned by C
    group = await cg_describe(c.conn, c.group_id)
    assert (group.error_code, group.group_state, group.group_epoch, group.assignment_epoch) == \
        (0, "Reconciling", 2, 2)
    types = sorted((m.member_epoch, m.member_type) for m in group.members)
    assert types == [(1, 0), (2, 1)]  # C: classic at generation 1; A: consumer at epoch 2


async def test_the_classic_member_rejoins_into_the_coordinators_assignment(target: Target) -> None:
    c, a = await upgraded(target)
    assert await c.heartbeat() == E.REBALANCE_IN_PROGRESS
    rejoined = await c.join()
    assert (rejoined.error_code, rejoined.generation_id, rejoined.protocol_type, rejoined.protocol_name) == \
        (0, 2, "consumer", "range")
    assert (rejoined.leader, rejoined.members, rejoined.skip_assignment) == ("", [], False)
    synced = await c.sync()
    mine = assigned(synced.assignment)
    assert synced.error_code == 0 and mine and synced.assignment[:2] == b"\x00\x03"
    assert await c.heartbeat() == 0
    await a.heartbeat()
    assert {p for _, p in a.partitions()} == ALL - mine


async def test_the_last_consumer_member_leaving_downgrades_the_group(target: Target) -> None:  # spec §10 #41
    c, a = await converged(target)
    left = await a.heartbeat(epoch=-1)
    assert (left.error_code, left.member_epoch) == (0, -1)
    gone = await cg_describe(c.conn, c.group_id)
    assert (gone.error_code, gone.error_message) == \
        (E.GROUP_ID_NOT_FOUND, f"Group {c.group_id} is not a consumer group.")
    classic = await describe(c.conn, c.group_id)
    assert (classic.group_state, classic.protocol_type, [m.member_id for m in classic.members]) == \
        ("PreparingRebalance", "consumer", [c.member_id])
    assert await c.heartbeat() == E.REBALANCE_IN_PROGRESS
    rejoined = await c.join()
    assert (rejoined.generation_id, rejoined.leader) == (3, c.member_id)


async def test_leave_group_removes_a_consumer_protocol_member_too(target: Target) -> None:
    c, _a = await converged(target)
    result = await c.leave("A", "nobody")
    assert [(m.member_id, m.error_code) for m in result.members] == [("A", 0), ("nobody", E.UNKNOWN_MEMBER_ID)]
    assert (await describe(c.conn, c.group_id)).group_state == "PreparingRebalance"


async def test_a_group_of_another_protocol_type_is_not_upgraded(target: Target) -> None:
    c = await Classic.connect(target, target.new_group_id())
    joined = await c.join_two_step(protocol_type="connect", names=("sessioned",), metadata=b"x")
    assert joined.error_code == 0
    a = await target.connect()
    response = await a.request(68, 1, group_id=c.group_id, member_id="A", member_epoch=0, instance_id=None,
                               rack_id=None, rebalance_timeout_ms=30_000, subscribed_topic_names=[TOPIC],
                               subscribed_topic_regex=None, server_assignor=None, topic_partitions=[])
    assert (response.error_code, response.error_message) == (
        E.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {c.group_id} to consumer group because the group does "
        "not use the consumer embedded protocol.")


async def test_classic_joins_on_a_consumer_group_follow_kafka_4_4(target: Target) -> None:
    group_id = target.new_group_id()
    a = await Member.join(target, group_id, "A", [TOPIC])
    c = await Classic.connect(target, group_id)
    first = await c.join()
    assert first.error_code == E.MEMBER_ID_REQUIRED and len(first.member_id) == 22
    c.member_id = "zzz"  # an id the coordinator never gave: 4.4.0 takes it as a new member
    joined = await c.join()
    assert (joined.error_code, joined.member_id, joined.leader, joined.members) == (0, "zzz", "", [])
    assert (await c.sync(generation=joined.generation_id + 5)).error_code == E.ILLEGAL_GENERATION
    assert (await c.sync(protocol_name="roundrobin")).error_code == E.INCONSISTENT_GROUP_PROTOCOL
    other = await Classic.connect(target, group_id)  # a protocol the classic member zzz does not list
    refused = await other.join(names=("roundrobin",))
    assert (refused.error_code, refused.member_id) == (E.INCONSISTENT_GROUP_PROTOCOL, "")
    await a.leave()


async def test_a_join_group_on_an_empty_consumer_group_makes_it_classic(target: Target) -> None:
    group_id = target.new_group_id()
    a = await Member.join(target, group_id, "A", [TOPIC])
    await a.leave()
    c = await Classic.connect(target, group_id)
    joined = await c.join_two_step()
    assert (joined.error_code, joined.generation_id, joined.leader) == (0, 1, c.member_id)
    gone = await cg_describe(c.conn, group_id)
    assert gone.error_code == E.GROUP_ID_NOT_FOUND


async def test_a_classic_static_member_replacing_the_last_consumer_member_downgrades_without_a_rebalance(
        target: Target) -> None:
    c = await Classic.connect(target, target.new_group_id())
    await c.stable()
    a = Member(target, await target.connect(), c.group_id, "A")
    await a.heartbeat(epoch=0, instance_id="i1", rebalance_timeout_ms=30_000, subscribed_topic_names=[TOPIC],
                      topic_partitions=[])
    assert await c.heartbeat() == E.REBALANCE_IN_PROGRESS
    await c.join()
    await c.sync()
    await a.heartbeat(instance_id="i1")
    mine = {p for _, p in a.partitions()}
    tp = codec.request_type(68).TopicPartitions
    owned = [tp(topic_id=target.topic_ids[TOPIC], partitions=sorted(mine))]
    await a.heartbeat(instance_id="i1", topic_partitions=owned)
    s = Classic(await target.connect(), c.group_id, instance="i1")
    joined = await s.join(owned=mine)
    assert (joined.error_code, joined.generation_id, joined.leader) == (0, 2, "")
    assert (await cg_describe(c.conn, c.group_id)).error_code == E.GROUP_ID_NOT_FOUND
    classic = await describe(c.conn, c.group_id)
    assert (classic.group_state, classic.protocol_data) == ("Stable", "range")
    synced = await s.sync()
    assert (synced.error_code, assigned(synced.assignment)) == (0, mine)
    assert (await s.heartbeat(), await c.heartbeat()) == (0, 0)


async def test_the_downgraded_group_is_led_by_the_first_member_in_kafkas_member_map(target: Target) -> None:
    group_id = target.new_group_id()
    a = await Member.join(target, group_id, "A", [TOPIC])
    c1, x = Classic(await target.connect(), group_id, "c1"), Classic(await target.connect(), group_id, "x")
    for member in (c1, x):
        assert (await member.join()).error_code == 0
    await a.heartbeat(epoch=-1)
    both = await asyncio.gather(c1.join(), x.join())  # both rejoin the downgraded group's rebalance
    assert [(r.error_code, r.generation_id, r.leader) for r in both] == [(0, 5, "x"), (0, 5, "x")]


async def test_a_classic_member_of_a_consumer_group_commits_with_its_generation(target: Target) -> None:
    c, _a = await converged(target)
    ok = await commit(c.conn, 8, c.group_id, c.generation, c.member_id, {TOPIC: [0]}, target.topic_ids)
    ahead = await commit(c.conn, 8, c.group_id, c.generation + 1, c.member_id, {TOPIC: [0]}, target.topic_ids)
    assert (ok, ahead) == ([(TOPIC, 0, 0)], [(TOPIC, 0, E.ILLEGAL_GENERATION)])  # v8 is fine for a classic member


async def test_a_classic_member_waiting_for_released_partitions_is_told_to_rejoin_once_they_are_free(
        target: Target) -> None:
    group_id = target.new_group_id()
    a = await Member.join(target, group_id, "A", [TOPIC])
    await target.wait_ms(1_200)  # past the assignment interval: C's join computes a new target at once
    c = Classic(await target.connect(), group_id, "c")
    joined = await c.join()
    assert (joined.error_code, joined.generation_id) == (0, 3)
    assert assigned((await c.sync()).assignment) == set()  # its target is still A's
    assert await c.heartbeat() == 0  # waiting on partitions A still owns
    await a.heartbeat()  # A learns what it must revoke
    await a.acknowledge()  # ... and revokes it
    assert await c.heartbeat() == E.REBALANCE_IN_PROGRESS  # now it can get them
    rejoined = await c.join()
    got = assigned((await c.sync()).assignment)
    assert rejoined.generation_id == 3 and got and got | {p for _, p in a.partitions()} == ALL


async def test_with_migration_disabled_live_groups_keep_their_protocol_and_empty_ones_still_convert(
        no_migration: Target) -> None:
    target = no_migration
    c = await Classic.connect(target, target.new_group_id())
    await c.stable()
    a = await target.connect()
    fields: dict[str, Any] = dict(member_id="A", member_epoch=0, instance_id=None, rack_id=None,
                                  rebalance_timeout_ms=30_000, subscribed_topic_names=[TOPIC],
                                  subscribed_topic_regex=None, server_assignor=None, topic_partitions=[])
    refused = await a.request(68, 1, group_id=c.group_id, **fields)
    assert (refused.error_code, refused.error_message) == (E.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group "
                                                          f"{c.group_id} to consumer group because online upgrade "
                                                          "is disabled.")
    await c.leave()  # now Empty: it converts whatever the policy
    assert (await a.request(68, 1, group_id=c.group_id, **fields)).error_code == 0
    other = await Classic.connect(target, c.group_id)
    assert (await other.join()).error_code == E.INCONSISTENT_GROUP_PROTOCOL
    assert (await other.join(version=3)).error_code == E.INCONSISTENT_GROUP_PROTOCOL
