"""Which coordinator answers a group request, the classic one or the consumer one (spec/kip848.md §7).

Kafka 4.4.0 keeps one map of groups of every type and dispatches on the type it finds
(``GroupMetadataManager.classicGroupJoin``, ``classicGroupSync``, ``classicGroupHeartbeat``, ``classicGroupLeave``):

* JoinGroup: a non-empty consumer group takes the member as a classic-protocol member; an Empty consumer group
  is deleted first and the classic coordinator creates a classic group (``maybeDeleteEmptyConsumerGroup``). The
  group id and session timeout checks come first (``GroupCoordinatorService.joinGroup``), on the classic path;
* SyncGroup, Heartbeat, LeaveGroup: any consumer group answers them itself (an Empty one with UNKNOWN_MEMBER_ID);
* ConsumerGroupHeartbeat: the consumer coordinator; when it took over a classic group of the same id (an Empty one,
  or a live one upgraded online), the classic coordinator lets it go: Kafka's classic tombstone comes before the
  consumer group's records, the offsets stay, and parked classic requests are answered REBALANCE_IN_PROGRESS.

Sans-I/O like both coordinators: every entry point takes ``now_ms`` and a token and returns :class:`Effects`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

from rebalance_lab.coordinator.classic.coordinator import GroupCoordinator
from rebalance_lab.coordinator.classic.messages import HeartbeatInput, JoinGroupInput, LeaveGroupInput, SyncGroupInput
from rebalance_lab.coordinator.consumer.coordinator import ConsumerGroupCoordinator
from rebalance_lab.coordinator.consumer.messages import ConsumerGroupHeartbeatInput, HeartbeatResult
from rebalance_lab.coordinator.consumer.topics import TopicsImage
from rebalance_lab.coordinator.effects import Effects


class GroupRouting:
    def __init__(self, classic: GroupCoordinator, consumer: ConsumerGroupCoordinator,
                 topics: Callable[[], TopicsImage]) -> None:
        self._classic = classic
        self._consumer = consumer
        self._topics = topics

    def join_group(self, now_ms: int, inp: JoinGroupInput, token: Hashable) -> Effects:
        cfg = self._classic.config
        if not inp.group_id or not cfg.min_session_timeout_ms <= inp.session_timeout_ms <= cfg.max_session_timeout_ms:
            return self._classic.join_group(now_ms, inp, token)  # rejected before any group is looked up
        if self._consumer.has_live_group(inp.group_id):
            return self._consumer.join_group(now_ms, inp, self._topics(), token)
        fx = self._consumer.convert_empty_group(now_ms, inp.group_id)
        fx.extend(self._classic.join_group(now_ms, inp, token))
        return fx

    def sync_group(self, now_ms: int, inp: SyncGroupInput, token: Hashable) -> Effects:
        if inp.group_id and self._consumer.has_group(inp.group_id):
            return self._consumer.sync_group(now_ms, inp, self._topics(), token)
        return self._classic.sync_group(now_ms, inp, token)

    def heartbeat(self, now_ms: int, inp: HeartbeatInput, token: Hashable) -> Effects:
        if inp.group_id and self._consumer.has_group(inp.group_id):
            return self._consumer.classic_heartbeat(now_ms, inp, token)
        return self._classic.heartbeat(now_ms, inp, token)

    def leave_group(self, now_ms: int, inp: LeaveGroupInput, token: Hashable) -> Effects:
        if inp.group_id and self._consumer.has_group(inp.group_id):
            return self._consumer.leave_group(now_ms, inp, self._topics(), token)
        return self._classic.leave_group(now_ms, inp, token)

    def consumer_heartbeat(self, now_ms: int, inp: ConsumerGroupHeartbeatInput, token: Hashable) -> Effects:
        fx = self._consumer.heartbeat(now_ms, inp, self._topics(), token)
        result = fx.reply_to(token)
        if isinstance(result, HeartbeatResult) and result.deletes_classic_group:
            classic = self._classic.convert_out(now_ms, inp.group_id)
            fx.records[:0] = classic.records
            fx.replies[:0] = classic.replies
        return fx
