"""Uniform assignor, members subscribed to different topics (Kafka 4.4.0 ``UniformHeterogeneousAssignmentBuilder``).

1. every member keeps its target's partitions of topics it still subscribes to;
2. the free partitions of each topic go, topic by topic in comparator order, to the least loaded
   subscriber (:class:`~.balancer.MemberAssignmentBalancer`);
3. topics with two or more subscribers are balanced: partitions move from the most to the least loaded
   subscriber until their sizes differ by at most one, for at most 16 rounds over the topics, stopping
   after a full round without a move.

Topics are ordered by (partitions per subscriber descending, subscribers ascending, ``Uuid.compareTo``),
a total order: the result depends on the member order only (their indices), not on any set's order.
"""

from __future__ import annotations

import uuid

from rebalance_lab.coordinator.consumer.assignors.balancer import MemberAssignmentBalancer
from rebalance_lab.coordinator.consumer.assignors.java_maps import IntSet, JavaAssignment
from rebalance_lab.coordinator.consumer.assignors.java_order import presized_capacity, uuid_sort_key, uuid_string
from rebalance_lab.coordinator.consumer.assignors.spec import GroupSpec
from rebalance_lab.coordinator.consumer.assignors.types import AssignorError

_MAX_ITERATION_COUNT = 16


class _Builder:
    def __init__(self, spec: GroupSpec) -> None:
        self.spec = spec
        self.member_ids = spec.member_ids
        self.sizes = [0] * len(self.member_ids)
        self.subscribers: dict[uuid.UUID, list[int]] = {}
        self.target: dict[str, JavaAssignment | None] = {}  # None: the stored target, untouched
        self.subscriptions: list[frozenset[uuid.UUID]] = []
        for index, member_id in enumerate(self.member_ids):
            ordered, _size = spec.subscribed_ids(member_id)
            for topic_id in ordered:
                if spec.num_partitions(topic_id) == -1:
                    raise AssignorError(
                        f"Members are subscribed to topic {uuid_string(topic_id)} "
                        "which doesn't exist in the topic metadata."
                    )
                self.subscribers.setdefault(topic_id, []).append(index)
            self.subscriptions.append(frozenset(ordered))
        self.owners = {topic_id: [-1] * spec.num_partitions(topic_id) for topic_id in self.subscribers}

    def sort_topics(self, topic_ids: list[uuid.UUID]) -> list[uuid.UUID]:
        """``topicComparator``: partitions per subscriber descending, subscribers ascending, then the id."""
        def key(topic_id: uuid.UUID) -> tuple[float, int, tuple[int, int]]:
            count = len(self.subscribers[topic_id])
            return -(self.spec.num_partitions(topic_id) / count), count, uuid_sort_key(topic_id)

        return sorted(topic_ids, key=key)

    def revoke(self) -> None:
        """``maybeRevokePartitions``: drop topics a member left, count and own what it keeps."""
        for index, member_id in enumerate(self.member_ids):
            dropped = []
            for topic_id, partitions in self.spec.members[member_id].assignment.items():
                if topic_id in self.subscriptions[index]:
                    self.sizes[index] += len(partitions)
                    owners = self.owners[topic_id]
                    for partition in partitions:
                        owners[partition] = index
                else:
                    dropped.append(topic_id)
            new = None
            if dropped:  # removing keys keeps the copy's order: which one goes first does not matter
                new = self.spec.stored(member_id).deep_copy()
                for topic_id in dropped:
                    new.table.remove(topic_id)
            self.target[member_id] = new

    def assign_unassigned(self) -> None:
        """``assignRemainingPartitions`` over ``computeUnassignedPartitions``."""
        free = {t: [p for p, owner in enumerate(owners) if owner == -1] for t, owners in self.owners.items()}
        balancer = MemberAssignmentBalancer(self.sizes)
        for topic_id in self.sort_topics([t for t, parts in free.items() if parts]):
            balancer.initialize(self.subscribers[topic_id])
            for partition in free[topic_id]:
                self.move(topic_id, partition, balancer.next_least_loaded())

    def balance(self) -> None:
        """``balance``/``balanceTopics``: rounds over the shared topics until one changes nothing."""
        shared = self.sort_topics([t for t, members in self.subscribers.items() if len(members) >= 2])
        if not shared:
            return
        last = -1
        balancer = MemberAssignmentBalancer(self.sizes)
        for _ in range(_MAX_ITERATION_COUNT):
            for topic_index, topic_id in enumerate(shared):
                if topic_index == last:
                    return
                if self.balance_topic(topic_id, balancer) > 0 or last == -1:
                    last = topic_index

    def balance_topic(self, topic_id: uuid.UUID, balancer: MemberAssignmentBalancer) -> int:
        """``balanceTopic``: move partitions of one topic from its most to its least loaded subscribers."""
        if balancer.initialize(self.subscribers[topic_id]) <= 1:
            return 0
        owners = self.owners[topic_id]
        partitions = sorted(range(len(owners)), key=lambda p: (owners[p], p))
        start: dict[int, int] = {}
        end: dict[int, int] = {}
        for i, partition in enumerate(partitions):
            start.setdefault(owners[partition], i)
            end[owners[partition]] = i + 1
        moved = 0
        while not balancer.is_balanced():
            donor = balancer.next_most_loaded()
            if donor == -1:
                break
            if end.get(donor, 0) - start.get(donor, 0) <= 0:
                balancer.exclude_most_loaded()
                continue
            end[donor] -= 1
            partition = partitions[end[donor]]
            receiver = balancer.next_least_loaded()
            if balancer.is_balanced():
                break
            self.move(topic_id, partition, receiver)
            moved += 1
        return moved

    def move(self, topic_id: uuid.UUID, partition: int, member_index: int) -> None:
        """``assignPartition``: take the partition from its owner, if any, and give it to the member."""
        old_owner = self.owners[topic_id][partition]
        if old_owner != -1:
            self.remove(topic_id, partition, old_owner)
        self.add(topic_id, partition, member_index)

    def add(self, topic_id: uuid.UUID, partition: int, member_index: int) -> None:
        assignment = self.mutable(member_index)

        def new_set(_topic: uuid.UUID) -> IntSet:
            count = self.spec.num_partitions(topic_id)
            subscribers = len(self.subscribers[topic_id])
            return IntSet(presized_capacity((count + subscribers - 1) // subscribers))

        assignment.table.compute_if_absent(topic_id, new_set).add(partition)
        self.owners[topic_id][partition] = member_index
        self.sizes[member_index] += 1

    def remove(self, topic_id: uuid.UUID, partition: int, member_index: int) -> None:
        assignment = self.mutable(member_index)
        partitions = assignment.table.get(topic_id)
        if partitions is not None:
            partitions.remove(partition)
            if not len(partitions):
                assignment.table.remove(topic_id)
        self.owners[topic_id][partition] = -1
        self.sizes[member_index] -= 1

    def mutable(self, member_index: int) -> JavaAssignment:
        member_id = self.member_ids[member_index]
        assignment = (self.target[member_id] or self.spec.stored(member_id)).mutable()
        self.target[member_id] = assignment
        return assignment


def assign_heterogeneous(spec: GroupSpec) -> dict[str, JavaAssignment | None]:
    """``UniformHeterogeneousAssignmentBuilder.build``; empty when no member subscribes to an existing topic."""
    builder = _Builder(spec)
    if not builder.subscribers:
        return {}
    builder.revoke()
    builder.assign_unassigned()
    builder.balance()
    return builder.target
