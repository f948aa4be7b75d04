"""The assignor's view of the group: ``GroupSpecImpl`` and ``SubscribedTopicDescriberImpl`` of Kafka 4.4.0."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from rebalance_lab.clients.assignors.java_hashmap import JavaHashMap
from rebalance_lab.coordinator.consumer.assignors.java_maps import JavaAssignment
from rebalance_lab.coordinator.consumer.assignors.java_order import (
    collection_capacity,
    member_spec_order,
    subscription_name_order,
    uuid_hash,
    uuid_sort_key,
)
from rebalance_lab.coordinator.consumer.assignors.types import MemberSubscription, SubscriptionType, TopicMetadata


@dataclass
class GroupSpec:
    """Members in ``memberSpecs`` (``HashMap``) order; their stored targets become Java maps on demand
    (most members of a large group keep their target untouched, and then its order does not matter)."""

    member_ids: list[str]
    members: dict[str, MemberSubscription]
    subscription_type: SubscriptionType
    topics: Mapping[uuid.UUID, TopicMetadata]
    topic_ids_by_name: dict[str, uuid.UUID]
    _stored: dict[str, JavaAssignment] = field(default_factory=dict)

    def stored(self, member_id: str) -> JavaAssignment:
        """The member's current target as ``Assignment.fromRecord`` built it."""
        found = self._stored.get(member_id)
        if found is None:
            found = self._stored[member_id] = JavaAssignment.from_record(self.members[member_id].assignment)
        return found

    @cached_property
    def assigned(self) -> dict[uuid.UUID, set[int]]:
        """``invertedTargetAssignment`` without the owners: topic -> assigned partitions."""
        by_topic: dict[uuid.UUID, set[int]] = {}
        for member in self.members.values():
            for topic_id, partitions in member.assignment.items():
                found = by_topic.get(topic_id)
                if found is None:
                    by_topic[topic_id] = set(partitions)
                else:
                    found.update(partitions)
        return by_topic

    def num_partitions(self, topic_id: uuid.UUID) -> int:
        """``SubscribedTopicDescriber.numPartitions``: -1 for a topic the image lacks."""
        topic = self.topics.get(topic_id)
        return -1 if topic is None else topic.num_partitions

    def assigned_partitions(self, topic_id: uuid.UUID) -> set[int] | frozenset[int]:
        """The topic's partitions ``GroupSpecImpl.isPartitionAssigned`` says yes to (the stored target's,
        ``invertedTargetAssignment``)."""
        return self.assigned.get(topic_id, frozenset())

    def subscribed_ids(self, member_id: str) -> tuple[list[uuid.UUID], int]:
        """The member's ``subscribedTopicIds()`` in ``TopicIds`` iteration order, and its ``size()``
        (the number of *names*, missing topics included)."""
        member = self.members[member_id]
        names = member.subscription_order
        if names is None:
            names = subscription_name_order(sorted(self.topics[t].name for t in member.subscribed_topic_ids
                                                   if t in self.topics))
        wanted = member.subscribed_topic_ids
        by_name = self.topic_ids_by_name
        ordered = [by_name[name] for name in names if name in by_name and by_name[name] in wanted]
        # Ids no name reaches (a topic the image lacks) come last, in Uuid order: only the error they
        # raise depends on where they are, and tests give at most one.
        extra = sorted(wanted.difference(ordered), key=uuid_sort_key)
        return ordered + extra, len(names) + len(extra)

    def subscribed_id_set_order(self, member_id: str) -> list[uuid.UUID]:
        """``new HashSet<>(subscribedTopicIds())`` iteration order (the homogeneous uniform builder's)."""
        ordered, size = self.subscribed_ids(member_id)
        table: JavaHashMap[uuid.UUID, None] = JavaHashMap(uuid_hash, collection_capacity(size))
        for topic_id in ordered:
            table.put(topic_id, None)
        return list(table.keys())


def build_spec(
    members: Sequence[MemberSubscription],
    subscription_type: SubscriptionType,
    topics: Mapping[uuid.UUID, TopicMetadata],
) -> GroupSpec:
    """``TargetAssignmentBuilder.build``'s ``GroupSpecImpl``: ``members`` arrive in ``memberSpecs`` put order."""
    by_id = {member.member_id: member for member in members}
    order = member_spec_order(member.member_id for member in members)
    by_name = {topic.name: topic_id for topic_id, topic in topics.items()}
    return GroupSpec(order, by_id, subscription_type, topics, by_name)
