"""Leaving and being removed (spec/kip848.md §6.3, §5.5-5.6; Kafka 4.4.0 ``consumerGroupLeave``,
``consumerGroupStaticMemberGroupLeave``, ``consumerGroupFenceMembers``).

Removing a member writes its tombstones and always bumps the group epoch, without computing a
new target: the next heartbeat of a remaining member does that. When the last member goes,
Kafka also resets the target-assignment metadata to the new epoch with timestamp 0, so the
empty group is not "Assigning" and its next member gets a target at once. A static member that
leaves with epoch -2 stays, at epoch -2, holding its partitions until it rejoins or its session
expires; no epoch bump.
"""

from __future__ import annotations

from dataclasses import replace

from rebalance_lab.coordinator.consumer import members, migration, subscriptions
from rebalance_lab.coordinator.consumer.context import Core, Pending
from rebalance_lab.coordinator.consumer.heartbeat import assignment_record, not_a_consumer_group
from rebalance_lab.coordinator.consumer.messages import ConsumerGroupHeartbeatInput, HeartbeatResult
from rebalance_lab.coordinator.consumer.model import TEMPORARY_LEAVE_EPOCH, ConsumerGroup, ConsumerMember
from rebalance_lab.coordinator.consumer.records import (
    GroupEpochBumped,
    MemberFenced,
    MemberLeft,
    RegexResolved,
    TargetAssignmentComputed,
)
from rebalance_lab.coordinator.consumer.topics import TopicsImage
from rebalance_lab.coordinator.records import GroupRecord
from rebalance_lab.protocol.errors import ErrorCode, KafkaError


def consumer_group(core: Core, group_id: str) -> ConsumerGroup:
    """``GroupMetadataManager.consumerGroup``: "not found" or "not a consumer group"."""
    group = core.groups.get(group_id)
    if group is not None:
        return group
    if core.classic_group_kind(group_id) is not None:
        raise not_a_consumer_group(group_id)
    raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")


def leave(core: Core, inp: ConsumerGroupHeartbeatInput, topics: TopicsImage, p: Pending) -> HeartbeatResult:
    """Epoch -1 (leave) or -2 (static member, temporary). No epoch validation on a leave."""
    group = consumer_group(core, inp.group_id)
    done = HeartbeatResult(member_id=inp.member_id, member_epoch=inp.member_epoch)
    if inp.instance_id is None:
        member = members.member_or_new(group, inp.member_id, False)
        fence(core, group, member, MemberLeft(group.group_id, p.now_ms, member.member_id, None), topics, p)
        return done
    member = members.static_member_or_raise(group, inp.member_id, inp.instance_id)
    if inp.member_epoch == TEMPORARY_LEAVE_EPOCH:
        p.record(MemberLeft(group.group_id, p.now_ms, member.member_id, member.instance_id, temporary=True))
        kept = {t: {part: 0 for part in ps} for t, ps in member.assigned.items()}  # resetAssignedPartitionsEpochsToZero
        away = replace(member, member_epoch=TEMPORARY_LEAVE_EPOCH, pending_revocation={}, assigned=kept)
        p.record(assignment_record(group.group_id, p.now_ms, away, topics))
        return HeartbeatResult(member_id=member.member_id, member_epoch=TEMPORARY_LEAVE_EPOCH)
    fence(core, group, member, MemberLeft(group.group_id, p.now_ms, member.member_id, member.instance_id), topics, p)
    return done


def fence(core: Core, group: ConsumerGroup, member: ConsumerMember, removal: GroupRecord, topics: TopicsImage,
          p: Pending) -> None:
    """``consumerGroupFenceMembers`` for one member: ``removal`` (a MemberLeft or MemberFenced) stands for its
    tombstones; regexes only it used are deleted; the epoch is bumped; its timers are cancelled. When only
    classic-protocol members remain, the group is downgraded instead (:func:`.migration.maybe_downgrade`)."""
    p.record(removal)
    if migration.maybe_downgrade(core, group, [member], topics, p):
        return
    deleted = [member.subscribed_topic_regex] if (
        member.subscribed_topic_regex and group.num_subscribed_members(member.subscribed_topic_regex) == 1) else []
    for regex in deleted:
        p.record(RegexResolved(group.group_id, p.now_ms, regex, None))
    names = subscriptions.names_without(group, [member], deleted)
    hashed = subscriptions.metadata_hash(names, topics)
    epoch = group.group_epoch + 1
    reason = removal.reason_code if isinstance(removal, MemberFenced) else "member_leave"
    p.record(GroupEpochBumped(group.group_id, p.now_ms, epoch, hashed, reason, member.member_id))
    if len(group.members) == 1:
        p.record(TargetAssignmentComputed(group.group_id, p.now_ms, epoch, None, None))
    core.cancel_member_timers(group.group_id, member.member_id)


def fence_operation(core: Core, group_id: str, member_id: str, reason: str, code: str, topics: TopicsImage,
                    p: Pending) -> bool:
    """``consumerGroupFenceMemberOperation``: a timer's (or the operator's) fence; False when there is no
    such group or member any more."""
    group = core.groups.get(group_id)
    member = group.members.get(member_id) if group is not None else None
    if group is None or member is None:
        return False
    fence(core, group, member, MemberFenced(group_id, p.now_ms, member_id, reason, code), topics, p)
    return True
