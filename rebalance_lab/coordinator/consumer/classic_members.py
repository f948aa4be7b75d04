"""Classic-protocol members inside a consumer group: JoinGroup (spec/kip848.md §7.3; Kafka 4.4.0
``GroupMetadataManager.classicGroupJoinToConsumerGroup``).

A consumer that speaks JoinGroup/SyncGroup joins a (non-empty) consumer group as a member like any
other: its subscription, owned partitions and rack come from the embedded ``ConsumerProtocolSubscription``
of its first protocol, its epoch is its generation, and the coordinator, not a leader, assigns. Every
JoinGroup is one reconciliation step (the eager client has revoked everything and owns nothing, the
cooperative one lists what it still owns): the answer carries the member's epoch as generation, protocol
type ``consumer``, its first protocol's name, no leader and no member list. The session timer then runs
on the JoinGroup's session timeout and a sync timer on its rebalance timeout.

SyncGroup, Heartbeat, LeaveGroup and the classic timers are in :mod:`.classic_session`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, replace

from rebalance_lab.clients.assignors.types import Subscription, TopicPartition
from rebalance_lab.coordinator.classic.conversion import Downgrade
from rebalance_lab.coordinator.classic.messages import JoinGroupInput, JoinGroupResult
from rebalance_lab.coordinator.consumer import members, migration
from rebalance_lab.coordinator.consumer.context import Core, Pending, TimerKind, TimerPayload
from rebalance_lab.coordinator.consumer.heartbeat import (
    _target,
    _update_metadata,
    _update_regexes,
    assignment_record,
    throw_if_full,
)
from rebalance_lab.coordinator.consumer.messages import OwnedPartitions
from rebalance_lab.coordinator.consumer.model import ConsumerGroup, ConsumerMember, Partitions
from rebalance_lab.coordinator.consumer.reconcile import Reconciliation, reconcile
from rebalance_lab.coordinator.consumer.records import MemberJoined, MemberMetadataUpdated, StaticMemberReplaced
from rebalance_lab.coordinator.consumer.subscriptions import current_type
from rebalance_lab.coordinator.consumer.target import subscribed_names, topic_ids
from rebalance_lab.coordinator.consumer.topics import TopicsImage
from rebalance_lab.protocol.consumer_protocol import PROTOCOL_TYPE, ConsumerProtocolError, decode_subscription
from rebalance_lab.protocol.errors import ErrorCode, KafkaError

_E = ErrorCode


@dataclass(frozen=True)
class JoinOutcome:
    result: JoinGroupResult
    session_timeout_ms: int | None = None  # None: no timers (MEMBER_ID_REQUIRED, or the group was downgraded)
    rebalance_timeout_ms: int = 0


def join(core: Core, group: ConsumerGroup, inp: JoinGroupInput, topics: TopicsImage, p: Pending) -> JoinOutcome:
    if migration.Policy.parse(core.config.migration_policy).disabled:
        raise KafkaError(_E.INCONSISTENT_GROUP_PROTOCOL, f"Cannot join the consumer group {group.group_id} with the "
                         "classic protocol because the group migration is disabled.")
    unknown = inp.member_id == ""
    member_id = core.new_member_id() if unknown else inp.member_id
    throw_if_full(core, group, member_id, inp.group_instance_id)
    if not supports_classic_protocols(group, inp.protocol_type, [p.name for p in inp.protocols]):
        raise KafkaError(_E.INCONSISTENT_GROUP_PROTOCOL, f"Member {member_id}'s protocols are not supported.")
    if unknown and inp.group_instance_id is None and inp.api_version >= 4:
        # JoinGroupRequest.requiresKnownMemberId: no state change, the member comes back with this id
        return JoinOutcome(JoinGroupResult(_E.MEMBER_ID_REQUIRED, member_id=member_id))
    member = _resolve(group, member_id, unknown, inp, p)
    replaced = group.static_member(inp.group_instance_id)
    downgrade = replaced is not None and migration.can_downgrade_replacing(core, group, replaced)
    subscription = _subscription(inp)
    updated = _with_join(member, inp, subscription.topics, subscription.rack_id)
    names_changed = _record_metadata(group, member, updated, p)
    regexes = _update_regexes(core, group, member, updated, topics, p)
    bump = names_changed or regexes.updated
    epoch, sub_type = group.group_epoch, current_type(group)
    if bump or group.has_metadata_expired(p.now_ms):
        reason = "member_join" if member.member_id not in group.members else "member_metadata_change"
        epoch, sub_type = _update_metadata(group, member, updated, bump, reason, topics, p)
    owned = owned_partitions(subscription.owned_partitions, topics)
    if downgrade and replaced is not None:
        final = _downgrade(core, group, updated, replaced, (epoch, bump, owned), topics, p)
    else:
        goal = _target(core, group, epoch, member, updated, sub_type, topics, p)
        final = _reconcile_classic(group, updated, goal, bump, owned, topics, p)
    protocol = inp.protocols[0].name
    result = JoinGroupResult(_E.NONE, final.member_id, final.member_epoch, PROTOCOL_TYPE, protocol)
    if downgrade:
        return JoinOutcome(result)
    return JoinOutcome(result, inp.session_timeout_ms, inp.rebalance_timeout_ms)


def supports_classic_protocols(group: ConsumerGroup, protocol_type: str, names: Iterable[str]) -> bool:
    """``ConsumerGroup.supportsClassicProtocols``: type ``consumer`` and, in a non-empty group, one name every
    classic member lists (vacuously true without classic members)."""
    if protocol_type != PROTOCOL_TYPE:
        return False
    wanted = set(names)
    if not group.members:
        return bool(wanted)
    classic = [m.classic_member_metadata for m in group.members.values() if m.classic_member_metadata is not None]
    return any(all(name in {n for n, _ in meta.supported_protocols} for meta in classic) for name in wanted)


def _resolve(group: ConsumerGroup, member_id: str, unknown: bool, inp: JoinGroupInput, p: Pending) -> ConsumerMember:
    """Dynamic: found or created, never "unknown" (4.4.0 creates a member for any unknown id). Static: a join
    with memberId "" replaces the instance's member whatever its protocol; a known id must own the instance."""
    instance_id = inp.group_instance_id
    if instance_id is None:
        return members.member_or_new(group, member_id, True)
    if not unknown:
        return members.static_member_or_raise(group, member_id, instance_id)
    old = group.static_member(instance_id)
    if old is None:
        return members.member_or_new(group, member_id, True)
    new = replace(old, member_id=member_id, member_epoch=0, previous_member_epoch=0)
    p.record(StaticMemberReplaced(group.group_id, p.now_ms, old.member_id, new, group.target.get(old.member_id, {})))
    return new


def _subscription(inp: JoinGroupInput) -> Subscription:
    """``deserializeSubscription``: the first protocol's metadata (all are assumed to carry the same)."""
    try:
        return decode_subscription(inp.protocols[0].metadata if inp.protocols else b"")
    except ConsumerProtocolError as exc:
        raise KafkaError(_E.INCONSISTENT_GROUP_PROTOCOL,
                         "Malformed embedded consumer protocol in subscription deserialization.") from exc


def _with_join(member: ConsumerMember, inp: JoinGroupInput, topic_names: Iterable[str],
               rack_id: str | None) -> ConsumerMember:
    """The member as the JoinGroup describes it; the server assignor is left as it was and the regex cleared."""
    return replace(
        member,
        instance_id=inp.group_instance_id if inp.group_instance_id is not None else member.instance_id,
        rack_id=rack_id if rack_id is not None else member.rack_id,
        rebalance_timeout_ms=(inp.rebalance_timeout_ms if inp.rebalance_timeout_ms != -1
                              else member.rebalance_timeout_ms),
        subscribed_topic_names=frozenset(topic_names), subscribed_topic_regex="",
        client_id=inp.client_id, client_host=inp.client_host,
        classic_member_metadata=migration.classic_metadata(inp.session_timeout_ms, inp.protocols),
    )


def _record_metadata(group: ConsumerGroup, member: ConsumerMember, updated: ConsumerMember, p: Pending) -> bool:
    """``hasMemberSubscriptionChanged``."""
    is_new = member.member_id not in group.members
    if updated.metadata() == member.metadata() and not is_new:
        return False
    kind = MemberJoined if is_new else MemberMetadataUpdated
    p.record(kind(group.group_id, p.now_ms, updated))
    return updated.subscribed_topic_names != member.subscribed_topic_names


def owned_partitions(owned: Iterable[TopicPartition], topics: TopicsImage) -> OwnedPartitions:
    """``Utils.toTopicPartitions``: the subscription's owned partitions by topic id; unknown topics dropped."""
    by_topic: dict[uuid.UUID, list[int]] = {}
    for tp in owned:
        topic = topics.get(tp.topic)
        if topic is not None:
            by_topic.setdefault(topic.topic_id, []).append(tp.partition)
    return tuple((t, tuple(ps)) for t, ps in by_topic.items())


def _reconcile_classic(group: ConsumerGroup, updated: ConsumerMember, goal: tuple[int, Partitions],
                       subscription_changed: bool, owned: OwnedPartitions, topics: TopicsImage,
                       p: Pending) -> ConsumerMember:
    """``maybeReconcile`` with the owned partitions of the subscription; no rebalance timer for a classic member
    (it is told to rejoin by its heartbeats instead)."""
    target_epoch, member_target = goal
    if not subscription_changed and updated.is_reconciled_to(target_epoch):
        return updated
    subscribed = topic_ids(subscribed_names(updated, group), topics)
    new = reconcile(updated, Reconciliation(target_epoch, member_target, subscribed, group.partition_epoch, owned,
                                            subscription_changed))
    if new != updated:
        p.record(assignment_record(group.group_id, p.now_ms, new, topics))
    return new


def _downgrade(core: Core, group: ConsumerGroup, updated: ConsumerMember, replaced: ConsumerMember,
               step: tuple[int, bool, OwnedPartitions], topics: TopicsImage, p: Pending) -> ConsumerMember:
    """A classic static member replaced the last consumer-protocol member: back to a classic group, rebalancing
    only when the target is stale (``convertToClassicGroup`` with the joining member)."""
    epoch, bump, owned = step
    rebalance = group.assignment_epoch < epoch
    final = updated
    if not rebalance:
        goal = (group.assignment_epoch, group.target_of(updated.member_id, updated.instance_id))
        final = _reconcile_classic(group, updated, goal, bump, owned, topics, p)
    kept = [migration.downgraded(group, m, m.member_id, topics) for m in migration.in_kafka_order(group)
            if m.instance_id is None or m.instance_id != updated.instance_id]
    joiner = migration.downgraded(group, final, replaced.member_id, topics)
    reason = migration.STALE_DOWNGRADE_REASON.format(group.group_id) if rebalance else None
    down = Downgrade(group.group_id, epoch, (*kept, joiner), reason)
    migration.record_downgrade(core, group, down, p)
    return final


def schedule_after_join(core: Core, group_id: str, member_id: str, outcome: JoinOutcome, now_ms: int) -> None:
    """After a successful join: the join timer stops, the session and sync timers start."""
    core.timers.cancel((TimerKind.CLASSIC_JOIN, group_id, member_id))
    if outcome.session_timeout_ms is None:
        return
    core.timers.schedule((TimerKind.SESSION, group_id, member_id), now_ms + outcome.session_timeout_ms,
                         TimerPayload())
    core.timers.schedule((TimerKind.CLASSIC_SYNC, group_id, member_id), now_ms + outcome.rebalance_timeout_ms,
                         TimerPayload())
