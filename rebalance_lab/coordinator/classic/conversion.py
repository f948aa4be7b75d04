"""Online migration, the classic side (KIP-848; spec/kip848.md §7): what a conversion needs from a classic group.

Kafka 4.4.0 converts a group in place, keeping its id and its committed offsets:

* **upgrade** (``GroupMetadataManager.convertToConsumerGroup``): a consumer-protocol member joins a
  non-empty classic group. The classic side hands over its members as they are (``GroupCoordinator.export_group``:
  the group's :class:`~.view.GroupView`), then the group goes away (:func:`remove_for_upgrade`): parked
  JoinGroup/SyncGroup requests are answered ``REBALANCE_IN_PROGRESS``
  (``ClassicGroup.completeAllJoinFutures``/``completeAllSyncFutures``) and its timers stop;
* **empty groups** convert either way without a policy check (``maybeDeleteEmptyClassicGroup``,
  :func:`remove_empty`);
* **downgrade** (``convertToClassicGroup`` and ``ClassicGroup.fromConsumerGroup``): the last
  consumer-protocol member left; the classic group is rebuilt from the remaining (classic)
  members by :func:`adopt`: Stable at generation = the consumer group's epoch, protocol type
  ``consumer``, the protocol voted as in any classic group, the leader = the first member added,
  each member's assignment = its *target* partitions serialized at the version of its metadata
  for the selected protocol, session timers re-armed, and (for a member leaving) a rebalance.

None of these removes offsets: the records here are not :class:`~.records.GroupDeleted`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rebalance_lab.clients.assignors.types import Assignment, TopicPartition
from rebalance_lab.coordinator.classic.context import Core, heartbeat_key, join_key, sync_key
from rebalance_lab.coordinator.classic.messages import JoinGroupResult, ProtocolEntry, SyncGroupResult
from rebalance_lab.coordinator.classic.model import Group, Member
from rebalance_lab.coordinator.classic.protocol_selection import select_protocol
from rebalance_lab.coordinator.classic.rebalance import (
    complete_join_future,
    complete_sync_future,
    prepare_rebalance,
    schedule_heartbeat,
)
from rebalance_lab.coordinator.classic.records import GroupDowngraded, GroupUpgraded
from rebalance_lab.coordinator.classic.state import GroupState
from rebalance_lab.coordinator.classic.sync import generation_snapshot
from rebalance_lab.coordinator.classic.view import CONSUMER_PROTOCOL_TYPE
from rebalance_lab.coordinator.effects import Effects
from rebalance_lab.protocol.consumer_protocol import ConsumerProtocolError, encode_assignment
from rebalance_lab.protocol.errors import ErrorCode

TopicPartitions = tuple[tuple[str, tuple[int, ...]], ...]  # (topic name, partitions), in serialization order


@dataclass(frozen=True)
class DowngradedMember:
    """One member of the classic group a downgrade builds (``ClassicGroup.fromConsumerGroup``)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocols: tuple[ProtocolEntry, ...]
    target: TopicPartitions  # the member's target assignment in the consumer group


@dataclass(frozen=True)
class Downgrade:
    """A consumer group turning classic: its epoch becomes the generation."""

    group_id: str
    generation_id: int
    members: tuple[DowngradedMember, ...]  # in the consumer group's member order; a joining member last
    rebalance_reason: str | None  # None: no rebalance (a static member replaced the last consumer member)


def group_kind(core: Core, group_id: str) -> str | None:
    """``"empty"``, ``"non-empty"`` or None (no classic group of this id), as the consumer side asks."""
    group = core.groups.get(group_id)
    if group is None or group.state is GroupState.DEAD:
        return None
    return "empty" if group.state is GroupState.EMPTY else "non-empty"


def remove_for_upgrade(core: Core, fx: Effects, now_ms: int, group: Group) -> None:
    """The classic half of ``convertToConsumerGroup``: parked requests answered, timers stopped, group gone."""
    for member in group.members.values():
        complete_join_future(fx, member, JoinGroupResult(ErrorCode.REBALANCE_IN_PROGRESS, member_id=member.member_id))
    for member in group.members.values():
        complete_sync_future(fx, member, SyncGroupResult(ErrorCode.REBALANCE_IN_PROGRESS))
    _forget(core, group)
    fx.record(GroupUpgraded(group.group_id, now_ms, group.generation_id, "protocol_upgrade"))


def remove_empty(core: Core, fx: Effects, now_ms: int, group: Group) -> None:
    """``maybeDeleteEmptyClassicGroup``: an Empty group gives way to a consumer group (offsets stay)."""
    _forget(core, group)
    fx.record(GroupUpgraded(group.group_id, now_ms, group.generation_id, "empty_group_conversion"))


def _forget(core: Core, group: Group) -> None:
    """Kafka leaves the classic timers to fire on a group that is gone (a no-op); we cancel them."""
    for member_id in [*group.members.keys(), *group.pending_join]:
        core.timers.cancel(heartbeat_key(group.group_id, member_id))
    core.timers.cancel(join_key(group.group_id))
    core.timers.cancel(sync_key(group.group_id))
    del core.groups[group.group_id]


def adopt(core: Core, fx: Effects, now_ms: int, downgrade: Downgrade) -> Group:
    """Build the classic group of a downgrade, in Stable, then rebalance if asked (``convertToClassicGroup``)."""
    group = Group(downgrade.group_id, core.flavor, now_ms, state=GroupState.STABLE,
                  previous_state=GroupState.STABLE, protocol_type=CONSUMER_PROTOCOL_TYPE,
                  generation_id=downgrade.generation_id)
    for m in downgrade.members:
        group.add(Member(m.member_id, m.group_instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                         m.session_timeout_ms, CONSUMER_PROTOCOL_TYPE, m.protocols))
    group.protocol_name = select_protocol(group).winner
    for m in downgrade.members:
        member = group.members[m.member_id]
        member.assignment = serialize_assignment(m.target, member.metadata_for(group.protocol_name))
    core.groups[group.group_id] = group
    fx.record(GroupDowngraded(group.group_id, now_ms, group.generation_id, group.protocol_name or "",
                              group.leader_id or "", len(group.members)))
    fx.record(generation_snapshot(group, now_ms))
    for member in group.members.values():
        schedule_heartbeat(core, group, member.member_id, now_ms, member.session_timeout_ms)
    if downgrade.rebalance_reason is not None:
        prepare_rebalance(core, fx, group, now_ms, downgrade.rebalance_reason, "protocol_downgrade")
    return group


def serialize_assignment(partitions: TopicPartitions, subscription: bytes) -> bytes:
    """``ConsumerProtocol.serializeAssignment`` at the version the member's subscription was written in.

    Kafka reads only the version header of the subscription (``deserializeVersion``); versions above
    the highest known are written as the highest, as ``ConsumerProtocol`` does.
    """
    tps = tuple(TopicPartition(topic, p) for topic, parts in partitions for p in parts)
    return encode_assignment(Assignment(partitions=tps, user_data=None), subscription_version(subscription))


def subscription_version(subscription: bytes) -> int:
    if len(subscription) < 2:
        raise ConsumerProtocolError("Malformed embedded consumer protocol in version deserialization.")
    return int.from_bytes(subscription[:2], "big", signed=True)


def ordered_partitions(by_topic: Sequence[tuple[str, Sequence[int]]]) -> TopicPartitions:
    """Topics by name, partitions ascending: our fixed order for Kafka's hash-ordered maps (compare as sets)."""
    return tuple((topic, tuple(sorted(parts))) for topic, parts in sorted(by_topic) if parts)
