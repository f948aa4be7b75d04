"""The target assignment of a new group epoch: Kafka 4.4.0's ``TargetAssignmentBuilder`` (spec §4.1-4.2).

Computed only inside a heartbeat, when the group epoch is ahead of the assignment epoch and
the group's assignment interval has passed since the last computation (4.4.0:
``group.consumer.assignment.interval.ms``, ``canComputeNextTargetAssignment``). The member
specs are the group's members with the heartbeating member added or updated
(``UpdatedMembersAndTargetAssignmentView``: a static member that replaces another takes the
old member's place and its target), each with its subscribed topic ids in the current image
and its current *target*. The result is one record: the members whose target changed and
the new assignment epoch.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass

from rebalance_lab.coordinator.consumer.assignors import (
    AssignorError,
    MemberSubscription,
    SubscriptionType,
    TopicMetadata,
    assign,
)
from rebalance_lab.coordinator.consumer.assignors.java_order import overlay_order, subscription_name_order
from rebalance_lab.coordinator.consumer.model import ConsumerGroup, ConsumerMember, Partitions
from rebalance_lab.coordinator.consumer.records import TargetAssignmentComputed
from rebalance_lab.coordinator.consumer.topics import TopicsImage
from rebalance_lab.protocol.errors import ErrorCode, KafkaError


def can_compute(last_timestamp_ms: int | None, interval_ms: int, now_ms: int) -> bool:
    """``canComputeNextTargetAssignment``: never computed (Kafka's timestamp 0, also written when the group
    emptied; None here, so that a manual clock's t=0 is a real time) always can."""
    return last_timestamp_ms is None or interval_ms == 0 or now_ms >= last_timestamp_ms + interval_ms


def subscribed_names(member: ConsumerMember, group: ConsumerGroup) -> frozenset[str]:
    """The member's names, plus the topics its regex resolved to (``newMemberSubscriptionAndAssignment``)."""
    names = member.subscribed_topic_names
    resolved = group.resolved_regexes.get(member.subscribed_topic_regex) if member.subscribed_topic_regex else None
    return names | resolved.topics if resolved is not None else names


def topic_ids(names: frozenset[str], topics: TopicsImage) -> frozenset[uuid.UUID]:
    """``TopicIds``: names of topics that do not exist are dropped."""
    return frozenset(t.topic_id for t in (topics.get(n) for n in names) if t is not None)


def members_view(group: ConsumerGroup, updated: ConsumerMember) -> tuple[list[ConsumerMember], dict[str, Partitions]]:
    """The members and targets with ``updated`` put in (``UpdatedMembersAndTargetAssignmentView``), in the
    order its ``OverlayMap`` iterates them: the group's members in ``TimelineHashMap`` order (an updated one
    in its place, a replaced static member skipped), then the added one."""
    members = dict(group.members)
    targets = dict(group.target)
    removed: list[str] = []
    members[updated.member_id] = updated
    previous = group.static_members.get(updated.instance_id) if updated.instance_id is not None else None
    if previous is not None and previous != updated.member_id:
        if previous in targets:
            targets[updated.member_id] = targets[previous]
        targets.pop(previous, None)
        members.pop(previous, None)
        removed.append(previous)
    order = overlay_order(group.member_order, removed, [updated.member_id])
    return [members[m] for m in order], targets


@dataclass(frozen=True)
class TargetInputs:
    group: ConsumerGroup
    epoch: int
    assignor: str
    subscription_type: SubscriptionType
    topics: TopicsImage
    now_ms: int


def compute(inp: TargetInputs, updated: ConsumerMember) -> tuple[TargetAssignmentComputed, Partitions]:
    """Run the assignor: the record, and the heartbeating member's new target. An assignor failure is
    UNKNOWN_SERVER_ERROR with Kafka's message."""
    group, topics = inp.group, inp.topics
    members, targets = members_view(group, updated)
    specs = []
    wanted: set[uuid.UUID] = set()
    # Members with the same subscription share its topic ids and name order (both immutable): most groups have
    # one subscription, and deriving it per member was a third of a 5,000-member compute.
    derived: dict[tuple[frozenset[str], str], tuple[frozenset[uuid.UUID], tuple[str, ...]]] = {}
    for m in members:
        key = (m.subscribed_topic_names, m.subscribed_topic_regex)
        known = derived.get(key)
        if known is None:
            known = derived[key] = (topic_ids(subscribed_names(m, group), topics), _name_order(m, group))
        ids, order = known
        wanted |= ids
        specs.append(MemberSubscription(m.member_id, m.instance_id, m.rack_id, ids, targets.get(m.member_id, {}),
                                        order))
    metadata = {tid: _metadata(topics, tid) for tid in wanted}
    try:
        result = assign(inp.assignor, specs, inp.subscription_type, metadata)
    except AssignorError as exc:
        raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, f"Failed to compute a new target assignment for epoch "
                         f"{inp.epoch}: {exc}") from exc
    changed: dict[str, Partitions] = {}
    for m in members:
        new = _clean(result.get(m.member_id, {}))
        if new != _clean(targets.get(m.member_id, {})) or m.member_id not in targets:
            changed[m.member_id] = new
    names = {tid: meta.name for tid, meta in metadata.items()}
    record = TargetAssignmentComputed(group.group_id, inp.now_ms, inp.epoch, inp.assignor, inp.now_ms, changed, names)
    return record, _clean(result.get(updated.member_id, {}))


def _name_order(member: ConsumerMember, group: ConsumerGroup) -> tuple[str, ...]:
    """The order Kafka's ``TopicIds`` walks the member's names (its set, united with its regex's topics)."""
    resolved = group.resolved_regexes.get(member.subscribed_topic_regex) if member.subscribed_topic_regex else None
    regex_topics = tuple(sorted(resolved.topics)) if resolved is not None else ()
    return subscription_name_order(tuple(sorted(member.subscribed_topic_names)), regex_topics)


def _metadata(topics: TopicsImage, topic_id: uuid.UUID) -> TopicMetadata:
    topic = topics.by_id(topic_id)
    assert topic is not None  # the ids come from this image
    return topic


def _clean(assignment: Mapping[uuid.UUID, frozenset[int]]) -> dict[uuid.UUID, frozenset[int]]:
    """Without empty topic entries (the assignors omit them); the values keep their record order
    (``PartitionSet``), which the sticky assignors read back next time."""
    return {t: p for t, p in assignment.items() if p}
