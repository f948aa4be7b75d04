"""Classic-protocol members inside a consumer group: SyncGroup, Heartbeat, LeaveGroup and their timers
(spec/kip848.md §7.3; Kafka 4.4.0 ``classicGroupSyncToConsumerGroup``, ``classicGroupHeartbeatToConsumerGroup``,
``classicGroupLeaveToConsumerGroup``, ``scheduleConsumerGroupJoinTimeoutIfAbsent``/``SyncTimeout``).

SyncGroup hands the member its *current* assigned partitions (not those pending revocation), serialized at the
version of its first protocol's subscription; nothing is written. A classic member learns that it must move on
from its heartbeats: REBALANCE_IN_PROGRESS while it is behind the assignment epoch, must revoke, or can now get
partitions that were released; then a join timer (its rebalance timeout) runs until it rejoins. LeaveGroup
removes members of either protocol (4.4.0 does not check: a consumer-protocol member goes too), with one epoch
bump for the batch, or downgrades the group when only classic members remain.
"""

from __future__ import annotations

from collections.abc import Iterable

from rebalance_lab.coordinator.classic.conversion import ordered_partitions, serialize_assignment
from rebalance_lab.coordinator.classic.messages import (
    HeartbeatInput,
    LeaveGroupInput,
    LeaveGroupResult,
    LeaveMember,
    LeaveMemberResult,
    SyncGroupInput,
    SyncGroupResult,
)
from rebalance_lab.coordinator.consumer import members, migration, subscriptions
from rebalance_lab.coordinator.consumer.context import Core, Pending, TimerKind, TimerPayload
from rebalance_lab.coordinator.consumer.model import ConsumerGroup, ConsumerMember, MemberState
from rebalance_lab.coordinator.consumer.records import (
    GroupEpochBumped,
    MemberLeft,
    RegexResolved,
    TargetAssignmentComputed,
)
from rebalance_lab.coordinator.consumer.topics import TopicsImage
from rebalance_lab.protocol.consumer_protocol import PROTOCOL_TYPE
from rebalance_lab.protocol.errors import ErrorCode, KafkaError

_E = ErrorCode


def member_for_request(group: ConsumerGroup, member_id: str, instance_id: str | None) -> ConsumerMember:
    """``validateConsumerGroupMember`` then ``throwIfMemberDoesNotUseClassicProtocol``."""
    if instance_id is None:
        member = members.member_or_new(group, member_id, False)
    else:
        found = group.static_member(instance_id)
        if found is None:
            raise KafkaError(_E.UNKNOWN_MEMBER_ID, f"Member with instance id {instance_id} is not a member of "
                             f"group {group.group_id}.")
        member = members.static_member_or_raise(group, member_id, instance_id)
    if not member.uses_classic_protocol:
        raise KafkaError(_E.UNKNOWN_MEMBER_ID, f"Member {member.member_id} does not use the classic protocol.")
    return member


def _check_generation(member: ConsumerMember, generation_id: int) -> None:
    """``throwIfGenerationIdUnmatched``."""
    if member.member_epoch != generation_id:
        raise KafkaError(_E.ILLEGAL_GENERATION, f"The request generation id {generation_id} is not equal to the "
                         f"member epoch {member.member_epoch} of member {member.member_id}.")


def first_protocol(member: ConsumerMember) -> tuple[str, bytes]:
    meta = member.classic_member_metadata
    assert meta is not None and meta.supported_protocols
    return meta.supported_protocols[0]


# -- SyncGroup --------------------------------------------------------------------------------------------------


def sync(core: Core, group: ConsumerGroup, inp: SyncGroupInput, topics: TopicsImage, now_ms: int) -> SyncGroupResult:
    member = member_for_request(group, inp.member_id, inp.group_instance_id)
    _check_generation(member, inp.generation_id)
    _check_protocol(member, inp.protocol_type, inp.protocol_name)
    if group.assignment_epoch > member.member_epoch and member.state is not MemberState.UNREVOKED_PARTITIONS:
        # throwIfRebalanceInProgress: the join timer is armed although the request fails
        arm_join_timer(core, group.group_id, member, now_ms)
        raise KafkaError(_E.REBALANCE_IN_PROGRESS, f"A new rebalance is triggered in group {group.group_id} and "
                         f"member {member.member_id} should rejoin to catch up.")
    core.timers.cancel((TimerKind.CLASSIC_SYNC, group.group_id, member.member_id))
    _reset_session(core, group.group_id, member, now_ms)
    return SyncGroupResult(_E.NONE, inp.protocol_type, inp.protocol_name, assignment_bytes(member, topics))


def _check_protocol(member: ConsumerMember, protocol_type: str | None, protocol_name: str | None) -> None:
    """``throwIfClassicProtocolUnmatched``: only what the request names is compared."""
    name, _ = first_protocol(member)
    if protocol_type is not None and protocol_type != PROTOCOL_TYPE:
        raise KafkaError(_E.INCONSISTENT_GROUP_PROTOCOL, f"The protocol type {protocol_type} from member "
                         f"{member.member_id} request is not equal to the group protocol type {PROTOCOL_TYPE}.")
    if protocol_name is not None and protocol_name != name:
        raise KafkaError(_E.INCONSISTENT_GROUP_PROTOCOL, f"The protocol name {protocol_name} from member "
                         f"{member.member_id} request is not equal to the protocol name {name} returned in the "
                         "join response.")


def assignment_bytes(member: ConsumerMember, topics: TopicsImage) -> bytes:
    """``prepareAssignment``: the assigned partitions as a ``ConsumerProtocolAssignment``, topics by name, in
    our fixed order (Kafka's follows its hash maps; clients read it as a set)."""
    named = [(name, sorted(ps)) for t, ps in member.assigned.items() if (name := topics.name_of(t)) is not None]
    return serialize_assignment(ordered_partitions(named), first_protocol(member)[1])


# -- Heartbeat --------------------------------------------------------------------------------------------------


def heartbeat(core: Core, group: ConsumerGroup, inp: HeartbeatInput, now_ms: int) -> ErrorCode:
    member = member_for_request(group, inp.member_id, inp.group_instance_id)
    _check_generation(member, inp.generation_id)
    _reset_session(core, group.group_id, member, now_ms)
    if must_rejoin(group, member):
        arm_join_timer(core, group.group_id, member, now_ms)
        return _E.REBALANCE_IN_PROGRESS
    return _E.NONE


def must_rejoin(group: ConsumerGroup, member: ConsumerMember) -> bool:
    """Behind the assignment epoch, partitions to revoke, or released partitions to take (4.4.0 compares with
    the *assignment* epoch: a bump not yet assigned does not make classic members rejoin)."""
    if member.member_epoch < group.assignment_epoch or member.state is MemberState.UNREVOKED_PARTITIONS:
        return True
    return member.state is MemberState.UNRELEASED_PARTITIONS and not waiting_on_unreleased(group, member)


def waiting_on_unreleased(group: ConsumerGroup, member: ConsumerMember) -> bool:
    """``ConsumerGroup.waitingOnUnreleasedPartition``: some target partition is still held by another member."""
    for topic_id, partitions in group.target.get(member.member_id, {}).items():
        assigned = member.assigned.get(topic_id, {})
        if any(p not in assigned and group.partition_epoch(topic_id, p) != -1 for p in partitions):
            return True
    return False


def _reset_session(core: Core, group_id: str, member: ConsumerMember, now_ms: int) -> None:
    meta = member.classic_member_metadata
    assert meta is not None
    core.timers.schedule((TimerKind.SESSION, group_id, member.member_id), now_ms + meta.session_timeout_ms,
                         TimerPayload())


def arm_join_timer(core: Core, group_id: str, member: ConsumerMember, now_ms: int) -> None:
    """``scheduleConsumerGroupJoinTimeoutIfAbsent``: a running join timer keeps its deadline."""
    key = (TimerKind.CLASSIC_JOIN, group_id, member.member_id)
    if not core.timers.is_scheduled(key):
        core.timers.schedule(key, now_ms + member.rebalance_timeout_ms, TimerPayload())


# -- LeaveGroup -------------------------------------------------------------------------------------------------


def leave(core: Core, group: ConsumerGroup, inp: LeaveGroupInput, topics: TopicsImage, p: Pending) -> LeaveGroupResult:
    """Each identity answered on its own; the valid ones are removed together (``consumerGroupFenceMembers``)."""
    leaving: dict[str, ConsumerMember] = {}
    results = []
    for who in inp.members:
        try:
            member = _leaving_member(group, who)
        except KafkaError as exc:
            results.append(LeaveMemberResult(who.member_id, who.group_instance_id, exc.code))
            continue
        leaving[member.member_id] = member
        results.append(LeaveMemberResult(who.member_id, who.group_instance_id, _E.NONE))
    if leaving:
        fence_members(core, group, list(leaving.values()), topics, p)
    return LeaveGroupResult(_E.NONE, tuple(results))


def _leaving_member(group: ConsumerGroup, who: LeaveMember) -> ConsumerMember:
    if who.group_instance_id is None:
        return members.member_or_new(group, who.member_id, False)
    member = group.static_member(who.group_instance_id)
    if member is None:
        raise KafkaError(_E.UNKNOWN_MEMBER_ID, f"Instance id {who.group_instance_id} is unknown.")
    if who.member_id != "":
        members.static_member_or_raise(group, who.member_id, who.group_instance_id)
    return member


def fence_members(core: Core, group: ConsumerGroup, leaving: list[ConsumerMember], topics: TopicsImage,
                  p: Pending) -> None:
    """``consumerGroupFenceMembers`` for a batch: a downgrade, or the tombstones and one epoch bump."""
    if migration.maybe_downgrade(core, group, leaving, topics, p):
        return
    for member in leaving:
        p.record(MemberLeft(group.group_id, p.now_ms, member.member_id, member.instance_id))
    deleted = _unused_regexes(group, leaving)
    for regex in deleted:
        p.record(RegexResolved(group.group_id, p.now_ms, regex, None))
    hashed = subscriptions.metadata_hash(subscriptions.names_without(group, leaving, deleted), topics)
    epoch = group.group_epoch + 1
    p.record(GroupEpochBumped(group.group_id, p.now_ms, epoch, hashed, "member_leave", leaving[0].member_id))
    if len(group.members) == len(leaving):
        p.record(TargetAssignmentComputed(group.group_id, p.now_ms, epoch, None, None))
    gid, ids = group.group_id, [m.member_id for m in leaving]

    def stop_timers() -> None:
        for member_id in ids:
            core.cancel_member_timers(gid, member_id)

    p.timers.append(stop_timers)


def _unused_regexes(group: ConsumerGroup, leaving: Iterable[ConsumerMember]) -> list[str]:
    """``maybeDeleteResolvedRegularExpressions``: regexes only the leaving members used."""
    counts: dict[str, int] = {}
    for m in leaving:
        if m.subscribed_topic_regex:
            counts[m.subscribed_topic_regex] = counts.get(m.subscribed_topic_regex, 0) + 1
    return [r for r, n in counts.items() if group.num_subscribed_members(r) == n]
