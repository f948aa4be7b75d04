"""A test context for online migration: the classic and the consumer coordinator side by side, routed as the
service routes them (``GroupRouting``), on one manual clock.

Classic requests take the embedded consumer protocol (topics, owned partitions) and give back decoded
assignments; consumer-protocol members use ids like ``A``. Defaults follow the broker the facts came from
(spec broker_facts "migration"): no initial rebalance delay, Kafka 4.4.0's consumer group settings.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Hashable, Iterable, Mapping
from typing import Any

from rebalance_lab.clients.assignors.types import Assignment, Subscription, TopicPartition
from rebalance_lab.config import ConsumerGroupConfig, Flavor, GroupConfig
from rebalance_lab.coordinator.classic.coordinator import GroupCoordinator
from rebalance_lab.coordinator.classic.messages import (
    HeartbeatInput,
    HeartbeatResult,
    JoinGroupInput,
    JoinGroupResult,
    LeaveGroupInput,
    LeaveGroupResult,
    LeaveMember,
    ProtocolEntry,
    SyncGroupInput,
    SyncGroupResult,
)
from rebalance_lab.coordinator.classic.view import GroupView
from rebalance_lab.coordinator.consumer.coordinator import ConsumerGroupCoordinator
from rebalance_lab.coordinator.consumer.group_routing import GroupRouting
from rebalance_lab.coordinator.consumer.messages import ConsumerGroupHeartbeatInput
from rebalance_lab.coordinator.consumer.messages import HeartbeatResult as CgResult
from rebalance_lab.coordinator.consumer.topics import TopicImage, TopicsImage
from rebalance_lab.coordinator.consumer.view import ConsumerGroupView
from rebalance_lab.protocol.consumer_protocol import decode_assignment, encode_assignment, encode_subscription
from rebalance_lab.protocol.errors import ErrorCode
from tests.support.effects_log import EffectsLog
from tests.unit.consumer.context import FOO, seeded_uuids

G = "g"


def subscription(topics: Iterable[str] = ("foo",), owned: Mapping[str, Iterable[int]] | None = None,
                 version: int = 3) -> bytes:
    tps = tuple(TopicPartition(t, p) for t, ps in (owned or {}).items() for p in ps)
    return encode_subscription(Subscription(topics=tuple(topics), owned_partitions=tps), version)


def assignment(parts: Mapping[str, Iterable[int]], user_data: bytes | None = None) -> bytes:
    tps = tuple(TopicPartition(t, p) for t, ps in parts.items() for p in ps)
    return encode_assignment(Assignment(partitions=tps, user_data=user_data), 3)


def partitions(raw: bytes) -> dict[str, set[int]]:
    found: dict[str, set[int]] = {}
    for tp in decode_assignment(raw).partitions:
        found.setdefault(tp.topic, set()).add(tp.partition)
    return found


class MixedCtx(EffectsLog[Any]):
    def __init__(self, policy: str = "bidirectional", *, classic_max_size: int = 2_147_483_647,
                 consumer_max_size: int = 2_147_483_647, topics: Iterable[TopicImage] = (FOO,)) -> None:
        ids = itertools.count(1)
        self.classic = GroupCoordinator(
            GroupConfig(min_session_timeout_ms=10, initial_rebalance_delay_ms=0, max_size=classic_max_size),
            Flavor.KAFKA_4, new_uuid=lambda: f"00000000-0000-4000-8000-{next(ids):012d}")
        self.consumer = ConsumerGroupCoordinator(
            ConsumerGroupConfig(migration_policy=policy, max_size=consumer_max_size), seeded_uuids(),
            self.classic.group_kind, classic=self.classic)
        self.topics = TopicsImage.of(topics)
        self.routing = GroupRouting(self.classic, self.consumer, lambda: self.topics)
        super().__init__()

    # -- plumbing ----------------------------------------------------------------------------------------------

    def _send(self, operation: Any, inp: Any) -> Hashable:
        token = self.next_token()
        self._apply(operation(self.now, inp, token))
        self.advance(0)  # timers already due (a zero initial delay) fire at once, as the service does
        return token

    def advance(self, ms: int) -> None:
        self.now += ms
        self._apply(self.classic.fire_timers(self.now))
        self._apply(self.consumer.fire_timers(self.now, self.topics))

    # -- classic requests ---------------------------------------------------------------------------------------

    def join(self, member_id: str = "", *, owned: Mapping[str, Iterable[int]] | None = None, version: int = 9,
             names: tuple[str, ...] = ("range",), topics: Iterable[str] = ("foo",), instance: str | None = None,
             protocol_type: str = "consumer", metadata: bytes | None = None, session_ms: int = 10_000,
             rebalance_ms: int = 30_000) -> Hashable:
        meta = metadata if metadata is not None else subscription(topics, owned)
        inp = JoinGroupInput(G, member_id, protocol_type, tuple(ProtocolEntry(n, meta) for n in names), session_ms,
                             rebalance_ms, version, instance, "classic", "/127.0.0.1")
        return self._send(self.routing.join_group, inp)

    def joined(self, member_id: str = "", **kw: Any) -> JoinGroupResult:
        result = self.replies[self.join(member_id, **kw)]
        assert isinstance(result, JoinGroupResult)
        return result

    def sync(self, member_id: str, generation: int, *, assignments: Mapping[str, bytes] | None = None,
             protocol_name: str | None = "range", protocol_type: str | None = "consumer",
             instance: str | None = None) -> SyncGroupResult:
        result = self.replies[self.send_sync(member_id, generation, assignments=assignments,
                                             protocol_name=protocol_name, protocol_type=protocol_type,
                                             instance=instance)]
        assert isinstance(result, SyncGroupResult)
        return result

    def send_sync(self, member_id: str, generation: int, *, assignments: Mapping[str, bytes] | None = None,
                  protocol_name: str | None = "range", protocol_type: str | None = "consumer",
                  instance: str | None = None) -> Hashable:
        """A SyncGroup whose answer may be parked (a follower ahead of its classic leader)."""
        inp = SyncGroupInput(G, member_id, generation, instance, protocol_type, protocol_name,
                             tuple((assignments or {}).items()))
        return self._send(self.routing.sync_group, inp)

    def heartbeat(self, member_id: str, generation: int, instance: str | None = None) -> ErrorCode:
        result = self.replies[self._send(self.routing.heartbeat, HeartbeatInput(G, member_id, generation, instance))]
        assert isinstance(result, HeartbeatResult)
        return result.error

    def leave(self, *members: tuple[str, str | None]) -> LeaveGroupResult:
        inp = LeaveGroupInput(G, tuple(LeaveMember(m, i) for m, i in members))
        result = self.replies[self._send(self.routing.leave_group, inp)]
        assert isinstance(result, LeaveGroupResult)
        return result

    def stable_classic(self, parts: Mapping[str, Iterable[int]] | None = None, **kw: Any) -> str:
        """One classic member C, Stable at generation 1, owning ``parts`` (default foo[0-5])."""
        first = self.joined(**kw)
        assert first.error is ErrorCode.MEMBER_ID_REQUIRED
        second = self.joined(first.member_id, **kw)
        assert (second.error, second.generation_id) == (ErrorCode.NONE, 1)
        raw = assignment(parts if parts is not None else {"foo": range(6)})
        synced = self.sync(second.member_id, 1, assignments={second.member_id: raw}, protocol_name=second.protocol_name)
        assert synced.error is ErrorCode.NONE
        return second.member_id

    # -- consumer-protocol requests -------------------------------------------------------------------------------

    def cg(self, member_id: str, epoch: int, **fields: Any) -> CgResult:
        inp = ConsumerGroupHeartbeatInput(group_id=G, member_id=member_id, member_epoch=epoch, **fields)
        result = self.replies[self._send(self.routing.consumer_heartbeat, inp)]
        assert isinstance(result, CgResult)
        return result

    def cg_join(self, member_id: str, topics: Iterable[str] = ("foo",), **fields: Any) -> CgResult:
        return self.cg(member_id, 0, subscribed_topic_names=tuple(topics), topic_partitions=(),
                       rebalance_timeout_ms=fields.pop("rebalance_timeout_ms", 30_000), **fields)

    # -- reading --------------------------------------------------------------------------------------------------

    def consumer_group(self) -> ConsumerGroupView:
        view = self.consumer.group(G)
        assert view is not None, "no consumer group"
        return view

    def classic_group(self) -> GroupView:
        view = self.classic.group(G)
        assert view is not None, "no classic group"
        return view

    def names(self, by_id: Mapping[uuid.UUID, Iterable[int]] | None) -> dict[str, set[int]] | None:
        if by_id is None:
            return None
        return {self.topics.name_of(t) or str(t): set(ps) for t, ps in by_id.items() if ps}


def converged(policy: str = "bidirectional", **kw: Any) -> tuple[MixedCtx, str]:
    """§10 #40 converged: A (consumer) owns foo[3,4,5], C (classic, range) foo[0,1,2], both at group epoch 2.

    Returns the context and C's member id."""
    ctx = MixedCtx(policy, **kw)
    c = ctx.stable_classic()
    ctx.cg_join("A")
    ctx.joined(c)
    ctx.sync(c, 2)
    ctx.cg("A", 2)
    return ctx, c
