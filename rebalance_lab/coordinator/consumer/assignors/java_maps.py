"""A member's ``Map<Uuid, Set<Integer>>`` as Kafka's assignors build, copy and iterate it.

Which partitions a sticky assignor keeps depends on the order it walks a member's current target, and
that order is the one of the Java structures: the stored target is ``Assignment.fromRecord`` (a default
``HashMap`` filled in the record's topic order, each topic's partitions in ``new HashSet<>(list)``),
``AssignorHelpers.deepCopyAssignment`` copies it into ``new HashMap<>(size)`` of ``new HashSet<>(set)``,
and the builders add topics with ``computeIfAbsent``. We replay those structures with
:class:`~rebalance_lab.clients.assignors.java_hashmap.JavaHashMap`, and the record Kafka then writes
lists them in their iteration order (``GroupCoordinatorRecordHelpers.newConsumerGroupTargetAssignmentRecord``).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping

from rebalance_lab.clients.assignors.java_hashmap import JavaHashMap
from rebalance_lab.coordinator.consumer.assignors.int_sets import IntHashSet
from rebalance_lab.coordinator.consumer.assignors.java_order import collection_capacity, uuid_hash
from rebalance_lab.coordinator.consumer.assignors.types import Assignment, PartitionSet, record_order

IntSet = IntHashSet


def copied_set(values: IntSet) -> IntSet:
    """``new HashSet<>(set)``."""
    return IntHashSet(collection_capacity(len(values)), values.keys())


class JavaAssignment:
    """One member's assignment map; ``immutable`` while it is still the stored ``unmodifiableMap``
    (``AssignorHelpers.isImmutableMap``), which the builders deep-copy before their first change."""

    __slots__ = ("immutable", "table")

    def __init__(self, table: JavaHashMap[uuid.UUID, IntSet], immutable: bool) -> None:
        self.table = table
        self.immutable = immutable

    @classmethod
    def from_record(cls, assignment: Mapping[uuid.UUID, frozenset[int]]) -> JavaAssignment:
        """``Assignment.fromRecord``: ``Collectors.toMap`` into a default ``HashMap``."""
        table: JavaHashMap[uuid.UUID, IntSet] = JavaHashMap(uuid_hash)
        for topic_id, partitions in assignment.items():
            order = record_order(partitions)
            table.put(topic_id, IntHashSet(collection_capacity(len(order)), order))
        return cls(table, immutable=True)

    def deep_copy(self) -> JavaAssignment:
        """``AssignorHelpers.deepCopyAssignment``: ``new HashMap<>(size)`` of ``new HashSet<>(set)``."""
        table: JavaHashMap[uuid.UUID, IntSet] = JavaHashMap(uuid_hash, len(self.table))
        for topic_id, partitions in self.table.items():
            table.put(topic_id, copied_set(partitions))
        return JavaAssignment(table, immutable=False)

    def mutable(self) -> JavaAssignment:
        """This map if already a copy, else a deep copy (the builders' ``isImmutableMap`` check)."""
        return self.deep_copy() if self.immutable else self

    def items(self) -> Iterator[tuple[uuid.UUID, IntSet]]:
        return self.table.items()

    def to_record(self) -> Assignment:
        """Topic -> partitions in Java iteration order: the order of the record Kafka writes."""
        return {topic_id: PartitionSet(partitions.keys()) for topic_id, partitions in self.table.items()}


EMPTY = JavaAssignment(JavaHashMap(uuid_hash), immutable=True)
"""``Assignment.EMPTY`` (``unmodifiableMap(Map.of())``); never mutated: ``mutable()`` copies it."""
