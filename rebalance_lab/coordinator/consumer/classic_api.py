"""The consumer group coordinator's classic entry points: JoinGroup, SyncGroup, Heartbeat and LeaveGroup sent
to a group id that is a consumer group (spec/kip848.md §7; Kafka 4.4.0 ``classicGroupJoin``/``Sync``/
``Heartbeat``/``Leave`` dispatching on the group's type).

A mixin of :class:`~.coordinator.ConsumerGroupCoordinator`, so the facade file stays about the consumer
protocol. Each entry point answers with the classic API's own result types; an error changes nothing
(Kafka's ``CoordinatorOperationExceptionHelper``: the error code only, member id "").
"""

from __future__ import annotations

from collections.abc import Hashable

from rebalance_lab.coordinator.classic.messages import (
    HeartbeatInput,
    HeartbeatResult,
    JoinGroupInput,
    JoinGroupResult,
    LeaveGroupInput,
    SyncGroupInput,
    SyncGroupResult,
)
from rebalance_lab.coordinator.consumer import classic_members, classic_session, migration
from rebalance_lab.coordinator.consumer.context import Core, Pending
from rebalance_lab.coordinator.consumer.model import ConsumerGroup
from rebalance_lab.coordinator.consumer.topics import TopicsImage
from rebalance_lab.coordinator.effects import Effects
from rebalance_lab.protocol.errors import ErrorCode, KafkaError


class ClassicMemberApis:
    _core: Core

    def _commit(self, p: Pending, fx: Effects) -> None:
        raise NotImplementedError  # the facade's

    # -- routing questions ---------------------------------------------------------------------------------------

    def has_live_group(self, group_id: str) -> bool:
        """A non-empty consumer group: a classic JoinGroup goes to it (an empty one is converted instead)."""
        group = self._core.groups.get(group_id)
        return group is not None and bool(group.members)

    def convert_empty_group(self, now_ms: int, group_id: str) -> Effects:
        """``maybeDeleteEmptyConsumerGroup``: a JoinGroup on an Empty consumer group deletes it (offsets stay);
        the classic coordinator then creates the group."""
        fx = Effects()
        group = self._core.groups.get(group_id)
        if group is None or group.members:
            return fx
        p = Pending(now_ms)
        p.record(migration.GroupDowngraded(group_id, now_ms, group.group_epoch, None))
        self._commit(p, fx)
        return fx

    # -- the classic APIs -----------------------------------------------------------------------------------------

    def join_group(self, now_ms: int, inp: JoinGroupInput, topics: TopicsImage, token: Hashable) -> Effects:
        fx = Effects()
        group = self._core.groups[inp.group_id]
        p = Pending(now_ms)
        try:
            outcome = classic_members.join(self._core, group, inp, topics, p)
        except KafkaError as exc:
            fx.reply(token, JoinGroupResult(exc.code))
            return fx
        self._commit(p, fx)
        if outcome.result.error is ErrorCode.NONE:
            classic_members.schedule_after_join(self._core, inp.group_id, outcome.result.member_id, outcome, now_ms)
        fx.reply(token, outcome.result)
        return fx

    def sync_group(self, now_ms: int, inp: SyncGroupInput, topics: TopicsImage, token: Hashable) -> Effects:
        fx = Effects()
        group = self._live(inp.group_id)
        try:
            if group is None:
                raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, "")
            result = classic_session.sync(self._core, group, inp, topics, now_ms)
        except KafkaError as exc:
            result = SyncGroupResult(exc.code)
        fx.reply(token, result)
        return fx

    def classic_heartbeat(self, now_ms: int, inp: HeartbeatInput, token: Hashable) -> Effects:
        fx = Effects()
        group = self._live(inp.group_id)
        try:
            if group is None:
                raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, "")
            error = classic_session.heartbeat(self._core, group, inp, now_ms)
        except KafkaError as exc:
            error = exc.code
        fx.reply(token, HeartbeatResult(error))
        return fx

    def leave_group(self, now_ms: int, inp: LeaveGroupInput, topics: TopicsImage, token: Hashable) -> Effects:
        fx = Effects()
        group = self._core.groups[inp.group_id]
        p = Pending(now_ms)
        result = classic_session.leave(self._core, group, inp, topics, p)
        self._commit(p, fx)
        fx.reply(token, result)
        return fx

    def _live(self, group_id: str) -> ConsumerGroup | None:
        """SyncGroup and Heartbeat on an Empty group are UNKNOWN_MEMBER_ID, before any member lookup."""
        group = self._core.groups.get(group_id)
        return group if group is not None and group.members else None

