"""What the server-side assignors take and return (Kafka 4.4.0 ``GroupSpec``/``SubscribedTopicDescriber``).

The inputs mirror ``org.apache.kafka.coordinator.group.modern.MemberSubscriptionAndAssignmentImpl`` and the
topic image the ``SubscribedTopicDescriberImpl`` reads. Java iteration orders decide which partitions a
member keeps, so two pieces of order ride along with the values:

* the order of a member's ``assignment`` mapping is the order of the topics in its
  ``ConsumerGroupTargetAssignmentMember`` record (what :func:`assign` returns is in that order), and a
  :class:`PartitionSet` carries the record's partition order (a plain ``frozenset`` is read ascending);
* ``subscription_order`` is the member's subscribed topic names in the order Kafka's ``Set<String>``
  iterates them (see :func:`java_order.subscription_name_order`).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum

from rebalance_lab.coordinator.consumer.topics import TopicImage


class SubscriptionType(Enum):
    """``org.apache.kafka.coordinator.group.api.assignor.SubscriptionType``."""

    HOMOGENEOUS = "HOMOGENEOUS"
    HETEROGENEOUS = "HETEROGENEOUS"


class AssignorError(Exception):
    """``PartitionAssignorException``; the message is Java's, word for word (the broker logs it and answers
    the heartbeat with UNKNOWN_SERVER_ERROR "Failed to compute a new target assignment for epoch N: <msg>")."""


class PartitionSet(frozenset[int]):
    """A member's partitions of one topic, remembering the order Java's ``HashSet<Integer>`` iterates them.

    Equal to (and hashing like) the plain ``frozenset``; ``order`` is the order of the ``partitions`` list in
    the target-assignment record Kafka writes, which decides what the sticky assignors keep next time.
    """

    __slots__ = ("order",)
    order: tuple[int, ...]

    def __new__(cls, order: Iterable[int]) -> PartitionSet:
        ordered = tuple(order)
        self = super().__new__(cls, ordered)
        self.order = ordered
        return self

    def __repr__(self) -> str:
        return f"PartitionSet({list(self.order)})"


def record_order(partitions: frozenset[int]) -> tuple[int, ...]:
    """The record order of a member's partitions: a :class:`PartitionSet`'s own, else ascending."""
    if isinstance(partitions, PartitionSet):
        return partitions.order
    return tuple(sorted(partitions))


@dataclass(frozen=True)
class MemberSubscription:
    """One member as ``TargetAssignmentBuilder`` hands it to the assignor.

    ``assignment`` is the member's current *target* (not what it owns). ``subscription_order``: the names
    of its subscription in Java's iteration order, names of missing topics included (``TopicIds.size()``
    counts them); ``None`` means "the names of ``subscribed_topic_ids`` put into a ``HashSet`` in ascending
    order", which equals Kafka's order unless two names share a hash bucket.
    """

    member_id: str
    instance_id: str | None
    rack_id: str | None
    subscribed_topic_ids: frozenset[uuid.UUID]
    assignment: Mapping[uuid.UUID, frozenset[int]]
    subscription_order: tuple[str, ...] | None = field(default=None, compare=False)


TopicMetadata = TopicImage
"""A topic as the assignors read it: the metadata image's own topic (id, name, partition count, replica racks),
as Kafka's ``SubscribedTopicDescriberImpl`` reads the ``CoordinatorMetadataImage`` itself."""


Assignment = dict[uuid.UUID, frozenset[int]]
"""One member's assignment: topic id -> partitions, in record order (values are :class:`PartitionSet`)."""
