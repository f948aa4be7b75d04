"""ConsumerGroupHeartbeat with epoch >= 0: join, heartbeat, reconcile (spec/kip848.md §2-§5; Kafka 4.4.0
``GroupMetadataManager.consumerGroupHeartbeat``).

The steps, in Kafka's order, all computed against the group as it was before the request:
find or create the group, refuse a full group, name a v0 member, find or create the member
(:mod:`.members`), apply the request's non-null fields, record a metadata change, update the
regex subscriptions (:mod:`.regex`), bump the group epoch when the subscription or the
preferred assignor changed or the subscribed topics' metadata hash moved, compute a new target
when the group epoch is ahead and the assignment interval allows (:mod:`.target`), reconcile
the member (:mod:`.reconcile`), reset its session timer and answer. The records are applied to
the group only when every step succeeded.
"""

from __future__ import annotations

from collections.abc import Callable

from rebalance_lab.coordinator.consumer import members, migration, regex, subscriptions, target
from rebalance_lab.coordinator.consumer.assignors import SubscriptionType
from rebalance_lab.coordinator.consumer.context import Core, Pending, TimerKind, TimerPayload
from rebalance_lab.coordinator.consumer.messages import ConsumerGroupHeartbeatInput, HeartbeatResult
from rebalance_lab.coordinator.consumer.model import (
    MAX_INT,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
    Partitions,
    evolve,
)
from rebalance_lab.coordinator.consumer.reconcile import Reconciliation, reconcile
from rebalance_lab.coordinator.consumer.records import (
    GroupCreated,
    GroupEpochBumped,
    MemberAssignmentChanged,
    MemberJoined,
    MemberMetadataUpdated,
    RegexResolved,
    StaticMemberReplaced,
)
from rebalance_lab.coordinator.consumer.topics import TopicsImage
from rebalance_lab.protocol.errors import ErrorCode, KafkaError


def not_a_consumer_group(group_id: str) -> KafkaError:
    return KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")


def group_for_heartbeat(core: Core, group_id: str, create: bool, p: Pending,
                        topics: TopicsImage) -> tuple[ConsumerGroup, bool]:
    """``getOrMaybeCreateConsumerGroup``: (group, whether a classic group of that id is replaced).

    A non-empty classic group is upgraded online (:func:`.migration.upgrade_group`, spec §7.2)."""
    group = core.groups.get(group_id)
    if group is not None:
        return group, False
    classic = core.classic_group_kind(group_id)
    if classic is None:
        if not create:
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
    elif create and classic == "non-empty" and core.classic is not None:
        return migration.upgrade_group(core, core.classic, group_id, topics, p), True
    elif not (create and classic == "empty"):
        raise not_a_consumer_group(group_id)
    p.record(GroupCreated(group_id, p.now_ms))
    return ConsumerGroup(group_id), classic == "empty"


def throw_if_full(core: Core, group: ConsumerGroup, member_id: str, instance_id: str | None) -> None:
    """``throwIfConsumerGroupIsFull``: a known instance id may always come back."""
    if group.has_static_member(instance_id):
        return
    limit = core.config.max_size
    if len(group.members) >= limit and (not member_id or member_id not in group.members):
        raise KafkaError(ErrorCode.GROUP_MAX_SIZE_REACHED,
                         f"The consumer group has reached its maximum capacity of {limit} members.")


def with_request(member: ConsumerMember, inp: ConsumerGroupHeartbeatInput) -> ConsumerMember:
    """``ConsumerGroupMember.Builder.maybeUpdate*``: a null field keeps the stored value."""
    if _changes_nothing(member, inp):
        return member
    return evolve(
        member,
        instance_id=inp.instance_id if inp.instance_id is not None else member.instance_id,
        rack_id=inp.rack_id if inp.rack_id is not None else member.rack_id,
        rebalance_timeout_ms=(inp.rebalance_timeout_ms if inp.rebalance_timeout_ms != -1
                              else member.rebalance_timeout_ms),
        server_assignor=inp.server_assignor if inp.server_assignor is not None else member.server_assignor,
        subscribed_topic_names=(frozenset(inp.subscribed_topic_names) if inp.subscribed_topic_names is not None
                                else member.subscribed_topic_names),
        subscribed_topic_regex=(inp.subscribed_topic_regex if inp.subscribed_topic_regex is not None
                                else member.subscribed_topic_regex),
        client_id=inp.client_id, client_host=inp.client_host, classic_member_metadata=None,
    )


def _changes_nothing(member: ConsumerMember, inp: ConsumerGroupHeartbeatInput) -> bool:
    """A plain heartbeat (every optional field null, the same client): the member as it is."""
    return (inp.instance_id is None and inp.rack_id is None and inp.rebalance_timeout_ms == -1
            and inp.server_assignor is None and inp.subscribed_topic_names is None
            and inp.subscribed_topic_regex is None and inp.client_id == member.client_id
            and inp.client_host == member.client_host and member.classic_member_metadata is None)


def heartbeat(core: Core, now_ms: int, inp: ConsumerGroupHeartbeatInput, topics: TopicsImage,
              p: Pending) -> HeartbeatResult:
    group, replaces_classic = group_for_heartbeat(core, inp.group_id, inp.member_epoch == 0, p, topics)
    throw_if_full(core, group, inp.member_id, inp.instance_id)
    member_id = inp.member_id or core.new_member_id()
    member = members.resolve(group, member_id, inp, p)
    updated = with_request(member, inp)
    # a static replacement already wrote the new member's records (StaticMemberReplaced): not a join
    is_new = member.member_id not in group.members and not any(isinstance(r, StaticMemberReplaced) for r in p.records)
    names_changed = _record_metadata(group, member, updated, is_new, p)
    regexes = _update_regexes(core, group, member, updated, topics, p, inp.may_describe)
    assignor_changed = _assignor_changed(core, group, member, updated)
    bump = names_changed or regexes.status is regex.RegexStatus.REGEX_UPDATED_AND_RESOLVED or assignor_changed
    epoch, sub_type = group.group_epoch, subscriptions.current_type(group)
    if bump or group.has_metadata_expired(now_ms):
        reason = "member_join" if is_new else "member_metadata_change"
        epoch, sub_type = _update_metadata(group, member, updated, bump, reason, topics, p)
    target_epoch, member_target = _target(core, group, epoch, member, updated, sub_type, topics, p)
    changed = names_changed or regexes.updated
    final = _reconcile(core, group, updated, (target_epoch, member_target), changed, inp, topics, p)
    p.timers.append(lambda: core.timers.schedule((TimerKind.SESSION, group.group_id, member_id),
                                                 now_ms + core.config.session_timeout_ms, TimerPayload()))
    full = (inp.rebalance_timeout_ms != -1 and inp.topic_partitions is not None
            and (inp.subscribed_topic_names is not None or inp.subscribed_topic_regex is not None))
    show = inp.member_epoch == 0 or full or dict(member.assigned) != dict(final.assigned)
    assignment = {t: tuple(sorted(ps)) for t, ps in final.assigned.items()} if show else None
    return HeartbeatResult(member_id=final.member_id, member_epoch=final.member_epoch,
                           heartbeat_interval_ms=core.config.heartbeat_interval_ms, assignment=assignment,
                           deletes_classic_group=replaces_classic)


def _preferred(core: Core, group: ConsumerGroup, old: ConsumerMember | None = None,
               new: ConsumerMember | None = None) -> str:
    return group.preferred_assignor(old, new) or core.default_assignor()


def _assignor_changed(core: Core, group: ConsumerGroup, member: ConsumerMember, updated: ConsumerMember) -> bool:
    """``hasPreferredServerAssignorChanged``. When the member keeps its assignor the counts do not change, and
    only a tie can make the two orders disagree: without one the answer is known without building them."""
    counts = group.server_assignors
    if member.server_assignor == updated.server_assignor and (
            len(counts) < 2 or list(counts.values()).count(max(counts.values())) == 1):
        return False
    return _preferred(core, group) != _preferred(core, group, member, updated)


def _record_metadata(group: ConsumerGroup, member: ConsumerMember, updated: ConsumerMember, is_new: bool,
                     p: Pending) -> bool:
    """``hasMemberSubscriptionChanged``: a metadata record when anything changed; True when the names did."""
    if updated.metadata() == member.metadata() and not is_new:
        return False
    kind = MemberJoined if is_new else MemberMetadataUpdated
    p.record(kind(group.group_id, p.now_ms, updated))
    return updated.subscribed_topic_names != member.subscribed_topic_names


def _update_regexes(core: Core, group: ConsumerGroup, member: ConsumerMember, updated: ConsumerMember,
                    topics: TopicsImage, p: Pending,
                    may_describe: Callable[[str], bool] | None = None) -> regex.RegexUpdate:
    if member.subscribed_topic_regex == updated.subscribed_topic_regex and not group.subscribed_regexes:
        return regex.NO_UPDATE  # no regex in the group and none asked for: nothing to refresh
    key = (TimerKind.REGEX, group.group_id, "")
    policy = regex.RefreshPolicy(p.now_ms, core.config.regex_refresh_interval_ms, topics.new_topics_version,
                                 core.timers.is_scheduled(key))
    update = regex.update_regexes(group, member, updated, policy)
    if update.removed is not None:
        p.record(RegexResolved(group.group_id, p.now_ms, update.removed, None))
    if update.resolve is not None:
        payload = TimerPayload(regexes=update.resolve, member_id=updated.member_id, may_describe=may_describe)
        p.timers.append(lambda: core.timers.schedule(key, p.now_ms, payload))
    return update


def _update_metadata(group: ConsumerGroup, member: ConsumerMember, updated: ConsumerMember, bump: bool, reason: str,
                     topics: TopicsImage, p: Pending) -> tuple[int, SubscriptionType]:
    """``updateSubscriptionMetadata``: the subscription type with the member counted, and the epoch bump."""
    names = subscriptions.names_with(group, member, updated)
    hashed = subscriptions.metadata_hash(names, topics)
    joining = updated.member_id not in group.members and not group.has_static_member(updated.instance_id)
    sub_type = subscriptions.subscription_type(subscriptions.regexes_with(group, member, updated), names,
                                               len(group.members) + (1 if joining else 0))
    epoch = group.group_epoch
    if hashed != group.metadata_hash:
        reason = reason if bump else "metadata_change"
        bump = True
    if bump:
        epoch += 1
        p.record(GroupEpochBumped(group.group_id, p.now_ms, epoch, hashed, reason, updated.member_id))
    group.refresh_deadline = (p.now_ms + MAX_INT, epoch)  # a plain field in Kafka too: not rolled back
    return epoch, sub_type


def _target(core: Core, group: ConsumerGroup, epoch: int, member: ConsumerMember, updated: ConsumerMember,
            sub_type: SubscriptionType, topics: TopicsImage, p: Pending) -> tuple[int, Partitions]:
    """``maybeUpdateTargetAssignment``."""
    if group.assignment_epoch >= epoch or not target.can_compute(
            group.assignment_timestamp_ms, core.config.assignment_interval_ms, p.now_ms):
        return group.assignment_epoch, group.target_of(updated.member_id, updated.instance_id)
    assignor = _preferred(core, group, member, updated)
    record, mine = target.compute(target.TargetInputs(group, epoch, assignor, sub_type, topics, p.now_ms), updated)
    p.record(record)
    return epoch, mine


def _reconcile(core: Core, group: ConsumerGroup, updated: ConsumerMember, goal: tuple[int, Partitions],
               subscription_changed: bool, inp: ConsumerGroupHeartbeatInput, topics: TopicsImage,
               p: Pending) -> ConsumerMember:
    """``maybeReconcile``; the rebalance timeout follows the member's state (consumer-protocol members)."""
    target_epoch, member_target = goal
    if not subscription_changed and updated.is_reconciled_to(target_epoch):
        return updated
    subscribed = target.topic_ids(target.subscribed_names(updated, group), topics)
    step = Reconciliation(target_epoch, member_target, subscribed, group.partition_epoch, inp.topic_partitions,
                          subscription_changed)
    new = reconcile(updated, step)
    if new == updated:
        return new
    p.record(assignment_record(group.group_id, p.now_ms, new, topics))
    if not new.uses_classic_protocol:
        p.timers.append(lambda: rebalance_timer(core, group.group_id, new, p.now_ms))
    return new


def assignment_record(group_id: str, now_ms: int, member: ConsumerMember,
                      topics: TopicsImage) -> MemberAssignmentChanged:
    ids = set(member.assigned) | set(member.pending_revocation)
    names = {t: n for t in ids if (n := topics.name_of(t)) is not None}
    return MemberAssignmentChanged(group_id, now_ms, member.member_id, member.member_epoch,
                                   member.previous_member_epoch, member.state.name, member.assigned,
                                   member.pending_revocation, names)


def rebalance_timer(core: Core, group_id: str, member: ConsumerMember, now_ms: int) -> None:
    """``scheduleConsumerGroupRebalanceTimeout`` while revoking (keyed: a new schedule replaces the old), else
    ``cancelGroupRebalanceTimeout``."""
    key = (TimerKind.REBALANCE, group_id, member.member_id)
    if member.state is MemberState.UNREVOKED_PARTITIONS:
        payload = TimerPayload(epoch=member.member_epoch, timeout_ms=member.rebalance_timeout_ms)
        core.timers.schedule(key, now_ms + member.rebalance_timeout_ms, payload)
    else:
        core.timers.cancel(key)
