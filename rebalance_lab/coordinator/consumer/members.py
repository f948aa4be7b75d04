"""Finding or creating the heartbeating member (spec/kip848.md §2.1.10, §6.1-6.2; Kafka 4.4.0).

``getOrMaybeSubscribeDynamicConsumerGroupMember`` and
``getOrMaybeSubscribeStaticConsumerGroupMember``: a dynamic member by its id; a static member
by its instance id, where a join under a new member id replaces the instance's previous member
once that one has left with epoch -2 (or either side speaks the classic protocol).
"""

from __future__ import annotations

from dataclasses import replace

from rebalance_lab.coordinator.consumer.context import Pending
from rebalance_lab.coordinator.consumer.messages import ConsumerGroupHeartbeatInput
from rebalance_lab.coordinator.consumer.model import TEMPORARY_LEAVE_EPOCH, ConsumerGroup, ConsumerMember
from rebalance_lab.coordinator.consumer.records import StaticMemberReplaced
from rebalance_lab.coordinator.consumer.validation import validate_member_epoch
from rebalance_lab.protocol.errors import ErrorCode, KafkaError


def unknown_member(group_id: str, member_id: str) -> KafkaError:
    return KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")


def member_or_new(group: ConsumerGroup, member_id: str, create: bool) -> ConsumerMember:
    """``ConsumerGroup.getOrMaybeCreateMember``."""
    member = group.members.get(member_id)
    if member is not None:
        return member
    if not create:
        raise unknown_member(group.group_id, member_id)
    return ConsumerMember(member_id)


def resolve(group: ConsumerGroup, member_id: str, inp: ConsumerGroupHeartbeatInput, p: Pending) -> ConsumerMember:
    create = inp.member_epoch == 0
    if inp.instance_id is None:
        member = member_or_new(group, member_id, create)
        validate_member_epoch(member, inp.member_epoch, inp.topic_partitions)
        return member
    return _static(group, member_id, inp.instance_id, inp, p)


def static_member_or_raise(group: ConsumerGroup, member_id: str, instance_id: str) -> ConsumerMember:
    """``throwIfStaticMemberIsUnknown`` then ``throwIfInstanceIdIsFenced``."""
    existing = group.static_member(instance_id)
    if existing is None:
        raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
    if existing.member_id != member_id:
        raise KafkaError(ErrorCode.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id {instance_id} "
                         f"was fenced by member {existing.member_id}.")
    return existing


def _static(group: ConsumerGroup, member_id: str, instance_id: str, inp: ConsumerGroupHeartbeatInput,
            p: Pending) -> ConsumerMember:
    if inp.member_epoch != 0:
        existing = static_member_or_raise(group, member_id, instance_id)
        validate_member_epoch(existing, inp.member_epoch, inp.topic_partitions)
        return existing
    old = group.static_member(instance_id)
    if old is None:
        return member_or_new(group, member_id, True)
    if not old.uses_classic_protocol and old.member_epoch != TEMPORARY_LEAVE_EPOCH:
        raise KafkaError(ErrorCode.UNRELEASED_INSTANCE_ID, f"Static member {member_id} with instance id "
                         f"{instance_id} cannot join the group because the instance id is owned by "
                         f"{old.member_id} member.")
    new = replace(old, member_id=member_id, member_epoch=0, previous_member_epoch=0)
    p.record(StaticMemberReplaced(group.group_id, p.now_ms, old.member_id, new, group.target.get(old.member_id, {})))
    return new
