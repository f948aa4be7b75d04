"""Range assignor (Kafka 4.4.0 ``org.apache.kafka.coordinator.group.assignor.RangeAssignor``).

Not sticky and not rack-aware in 4.4.0 (the current target is ignored). Members are sorted: static
members first by instance id, then the others by member id (``String.compareTo``). Per topic, the
subscribers in that order take consecutive ranges of ``partitions // subscribers``, the first
``partitions % subscribers`` one more; a member whose range is empty gets no entry for the topic.
Homogeneous groups count every member as a subscriber of the first member's topics; heterogeneous ones
count each topic's subscribers.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from rebalance_lab.clients.assignors.java_hashmap import JavaHashMap, java_str_key
from rebalance_lab.coordinator.consumer.assignors.java_order import presized_capacity, uuid_hash
from rebalance_lab.coordinator.consumer.assignors.spec import GroupSpec
from rebalance_lab.coordinator.consumer.assignors.types import Assignment, AssignorError, PartitionSet, SubscriptionType

_MISSING_TOPIC = "Member is subscribed to a non-existent topic"


@dataclass
class _Topic:
    """``RangeAssignor.TopicMetadata``: the quota is computed on first use, then ranges are handed out."""

    topic_id: uuid.UUID
    num_partitions: int
    num_members: int
    min_quota: int = -1
    extra: int = -1
    next_start: int = 0

    def next_range(self) -> range:
        if self.min_quota == -1:
            self.min_quota, self.extra = divmod(self.num_partitions, self.num_members)
        quota = self.min_quota
        if self.extra > 0:
            quota += 1
            self.extra -= 1
        start = self.next_start
        self.next_start = min(start + quota, self.num_partitions)
        return range(start, self.next_start)


def sorted_member_ids(spec: GroupSpec) -> list[str]:
    """``sortMemberIds``: instance ids first (ascending), then member ids (ascending)."""
    def key(member_id: str) -> tuple[int, bytes]:
        instance_id = spec.members[member_id].instance_id
        return (0, java_str_key(instance_id)) if instance_id is not None else (1, java_str_key(member_id))

    return sorted(spec.member_ids, key=key)


def assign_range(spec: GroupSpec) -> dict[str, Assignment]:
    """``RangeAssignor.assign``: every member appears, each topic's partitions in ascending order."""
    if not spec.member_ids:
        return {}
    members = sorted_member_ids(spec)
    if spec.subscription_type is SubscriptionType.HOMOGENEOUS:
        topics = _homogeneous_topics(spec, members[0], len(members))
        plan = {member_id: (topics, len(topics)) for member_id in members}
    else:
        plan = _heterogeneous_topics(spec, members)
    return {member_id: _member_assignment(*planned) for member_id, planned in plan.items()}


def _homogeneous_topics(spec: GroupSpec, first: str, num_members: int) -> list[_Topic]:
    topics = []
    for topic_id in spec.subscribed_ids(first)[0]:
        count = spec.num_partitions(topic_id)
        if count == -1:
            raise AssignorError(_MISSING_TOPIC)
        topics.append(_Topic(topic_id, count, num_members))
    return topics


def _heterogeneous_topics(spec: GroupSpec, members: list[str]) -> dict[str, tuple[list[_Topic], int]]:
    """Each member's topics, and the ``size()`` of its subscription that presizes its map (``TopicIds``
    counts the names, missing topics included)."""
    by_id: dict[uuid.UUID, _Topic] = {}
    plan: dict[str, tuple[list[_Topic], int]] = {}
    for member_id in members:
        ordered, size = spec.subscribed_ids(member_id)
        mine: list[_Topic] = []
        plan[member_id] = (mine, size)
        for topic_id in ordered:
            topic = by_id.get(topic_id)
            if topic is None:
                count = spec.num_partitions(topic_id)
                if count == -1:
                    raise AssignorError(_MISSING_TOPIC)
                topic = by_id[topic_id] = _Topic(topic_id, count, 0)
            topic.num_members += 1
            mine.append(topic)
    return plan


def _member_assignment(topics: list[_Topic], expected: int) -> Assignment:
    """One member's ``HashMap`` (presized for ``expected`` topics) of ``RangeSet``s, in iteration order."""
    table: JavaHashMap[uuid.UUID, range] = JavaHashMap(uuid_hash, presized_capacity(expected))
    for topic in topics:
        partitions = topic.next_range()
        if partitions:
            table.put(topic.topic_id, partitions)
    return {topic_id: PartitionSet(partitions) for topic_id, partitions in table.items()}
