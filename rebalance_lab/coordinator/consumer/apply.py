"""The only code that changes a :class:`ConsumerGroup`: it folds records (STYLE.md principle 2).

Each branch is the replay of the matching Kafka record in ``GroupMetadataManager.replay``
and ``ConsumerGroup.updateMember``/``removeMember``: the member map keeps insertion order,
the indexes (static members, subscription counts, assignor counts, partition epochs, the
inverted target) follow every member change.
"""

from __future__ import annotations

from rebalance_lab.coordinator.consumer import records as r
from rebalance_lab.coordinator.consumer.assignors.java_order import TimelineKeyOrder
from rebalance_lab.coordinator.consumer.model import (
    ConsumerGroup,
    ConsumerMember,
    EpochMap,
    MemberState,
    Partitions,
    ResolvedRegex,
    SubscriptionCount,
    count,
    evolve,
)
from rebalance_lab.coordinator.consumer.snapshot import KeyOrdersRestored
from rebalance_lab.coordinator.records import GroupRecord


def apply(group: ConsumerGroup, record: GroupRecord) -> None:
    if isinstance(record, r.MemberJoined):  # and MemberMetadataUpdated
        old = group.members.get(record.member.member_id)
        update_member(group, old, _with_metadata(old or ConsumerMember(record.member.member_id), record.member))
    elif isinstance(record, r.StaticMemberReplaced):
        remove_member(group, record.old_member_id)
        update_member(group, None, record.member)
        set_target(group, record.member.member_id, record.target)
    elif isinstance(record, r.GroupEpochBumped):
        group.group_epoch = record.epoch
        group.metadata_hash = record.metadata_hash
    elif isinstance(record, r.TargetAssignmentComputed):
        for member_id, target in record.targets.items():
            set_target(group, member_id, target)
        group.assignment_epoch = record.epoch
        group.assignment_timestamp_ms = record.timestamp_ms
    elif isinstance(record, r.MemberAssignmentChanged):
        _apply_assignment(group, record)
    elif isinstance(record, r.MemberFenced) or (isinstance(record, r.MemberLeft) and not record.temporary):
        remove_member(group, record.member_id)
    elif isinstance(record, r.RegexResolved):
        set_resolved_regex(group, record.regex, record.resolved)
    elif isinstance(record, KeyOrdersRestored):  # the last record of a snapshot
        group.member_order = TimelineKeyOrder.restored(record.members)
        group.assignor_order = TimelineKeyOrder.restored(record.assignors)


def _with_metadata(member: ConsumerMember, source: ConsumerMember) -> ConsumerMember:
    return evolve(member, instance_id=source.instance_id, rack_id=source.rack_id, client_id=source.client_id,
                   client_host=source.client_host, subscribed_topic_names=source.subscribed_topic_names,
                   subscribed_topic_regex=source.subscribed_topic_regex, server_assignor=source.server_assignor,
                   rebalance_timeout_ms=source.rebalance_timeout_ms,
                   classic_member_metadata=source.classic_member_metadata)


def _apply_assignment(group: ConsumerGroup, record: r.MemberAssignmentChanged) -> None:
    old = group.members.get(record.member_id) or ConsumerMember(record.member_id)
    new = evolve(old, member_epoch=record.epoch, previous_member_epoch=record.previous_epoch,
                  state=MemberState[record.state], assigned=record.assigned,
                  pending_revocation=record.pending_revocation)
    update_member(group, old if record.member_id in group.members else None, new)


def update_member(group: ConsumerGroup, old: ConsumerMember | None, new: ConsumerMember) -> None:
    """``ConsumerGroup.updateMember``: the member and every index that depends on it."""
    group.members[new.member_id] = new
    group.member_order.put(new.member_id)
    gone = old.instance_id if old is not None and old.instance_id != new.instance_id else None
    if gone is not None and old is not None and group.static_members.get(gone) == old.member_id:
        del group.static_members[gone]
    if new.instance_id is not None:
        group.static_members[new.instance_id] = new.member_id
    _count_member(group, old, -1)
    _count_member(group, new, 1)
    if old is not None:
        _remove_epochs(group, old.assigned, old.member_epoch)
        _remove_epochs(group, old.pending_revocation, old.member_epoch)
    _add_epochs(group, new.assigned, new.member_epoch)
    _add_epochs(group, new.pending_revocation, new.member_epoch)


def remove_member(group: ConsumerGroup, member_id: str) -> None:
    """The member's three tombstones (current assignment, target, metadata)."""
    old = group.members.pop(member_id, None)
    group.member_order.remove(member_id)
    set_target(group, member_id, None)
    if old is None:
        return
    if old.instance_id is not None and group.static_members.get(old.instance_id) == member_id:
        del group.static_members[old.instance_id]
    _count_member(group, old, -1)
    _remove_epochs(group, old.assigned, old.member_epoch)
    _remove_epochs(group, old.pending_revocation, old.member_epoch)


def _count_member(group: ConsumerGroup, member: ConsumerMember | None, delta: int) -> None:
    if member is None:
        return
    for name in member.subscribed_topic_names:
        counts = group.subscribed_names.setdefault(name, SubscriptionCount())
        counts.by_name += delta
        _drop_if_unused(group, name)
    if member.subscribed_topic_regex:
        count(group.subscribed_regexes, member.subscribed_topic_regex, delta)
    _count_assignor(group, member.server_assignor, delta)


def _count_assignor(group: ConsumerGroup, name: str | None, delta: int) -> None:
    """The assignor counts and their ``TimelineHashMap`` order (a count reaching 0 is removed, and put back
    at the end of its slot when it comes again)."""
    if name is None:
        return
    value = group.server_assignors.get(name, 0) + delta
    if value <= 0:
        group.server_assignors.pop(name, None)
        group.assignor_order.remove(name)
        return
    if name not in group.server_assignors:
        group.assignor_order.put(name)
    group.server_assignors[name] = value


def _drop_if_unused(group: ConsumerGroup, name: str) -> None:
    counts = group.subscribed_names.get(name)
    if counts is not None and counts.by_name <= 0 and counts.by_regex <= 0:
        del group.subscribed_names[name]


def set_resolved_regex(group: ConsumerGroup, regex: str, resolved: ResolvedRegex | None) -> None:
    """``updateResolvedRegularExpression``: each resolved regex counts its topics once."""
    old = group.resolved_regexes.pop(regex, None)
    if old is not None:
        for name in old.topics:
            group.subscribed_names.setdefault(name, SubscriptionCount()).by_regex -= 1
            _drop_if_unused(group, name)
    if resolved is not None:
        group.resolved_regexes[regex] = resolved
        for name in resolved.topics:
            group.subscribed_names.setdefault(name, SubscriptionCount()).by_regex += 1


def set_target(group: ConsumerGroup, member_id: str, target: Partitions | None) -> None:
    """The member's target and the inverted map (partition -> member) kept beside it."""
    old = group.target.pop(member_id, None)
    if old is not None:
        for topic_id, partitions in old.items():
            owners = group.inverted_target.get(topic_id, {})
            for p in partitions:
                if owners.get(p) == member_id:
                    del owners[p]
            if not owners:
                group.inverted_target.pop(topic_id, None)
    if target is None:
        return
    group.target[member_id] = target
    for topic_id, partitions in target.items():
        owners = group.inverted_target.setdefault(topic_id, {})
        for p in partitions:
            owners[p] = member_id


def _remove_epochs(group: ConsumerGroup, assignment: EpochMap, expected_epoch: int) -> None:
    """``removePartitionEpochs``: only an entry still held at the member's epoch is freed."""
    for topic_id, partitions in assignment.items():
        epochs = group.partition_epochs.get(topic_id)
        if epochs is None:
            continue
        for p in partitions:
            if epochs.get(p) == expected_epoch:
                del epochs[p]
        if not epochs:
            del group.partition_epochs[topic_id]


def _add_epochs(group: ConsumerGroup, assignment: EpochMap, epoch: int) -> None:
    for topic_id, partitions in assignment.items():
        epochs = group.partition_epochs.setdefault(topic_id, {})
        for p in partitions:
            epochs[p] = epoch
