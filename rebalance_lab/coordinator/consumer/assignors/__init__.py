"""Server-side assignors of the KIP-848 consumer group, output-identical to Kafka 4.4.0's group coordinator.

``assign(name, members, subscription_type, topics)`` is ``TargetAssignmentBuilder.build``'s call of the
assignor: ``members`` in the order Java puts them into ``memberSpecs`` (the group's ``TimelineHashMap``
order with the updated member replaced in place or added last, see :mod:`.java_order`), each with its
current *target* assignment. The result has an entry for every member the assignor returns (an absent
member means an empty assignment, as in Java's ``TargetAssignmentBuilder.newMemberAssignment``), each in
the order of the ``ConsumerGroupTargetAssignmentMember`` record Kafka writes for it.

The coordinator writes a record, and so replaces the stored target, only for members whose partitions
changed; members whose sets are equal keep their stored target (and its order). Feeding the results back
that way reproduces Kafka's stickiness exactly. (A member the assignor left untouched gets its input
mapping back as it came, not re-ordered: no record is written for it, so its order is not observable.)
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence

from rebalance_lab.coordinator.consumer.assignors.range import assign_range
from rebalance_lab.coordinator.consumer.assignors.spec import build_spec
from rebalance_lab.coordinator.consumer.assignors.types import (
    Assignment,
    AssignorError,
    MemberSubscription,
    PartitionSet,
    SubscriptionType,
    TopicMetadata,
)
from rebalance_lab.coordinator.consumer.assignors.uniform import assign_uniform

ASSIGNOR_NAMES = ("uniform", "range")
"""``group.consumer.assignors`` default order in 4.4.0: the first is the default assignor."""

__all__ = [
    "ASSIGNOR_NAMES",
    "Assignment",
    "AssignorError",
    "MemberSubscription",
    "PartitionSet",
    "SubscriptionType",
    "TopicMetadata",
    "assign",
]


def assign(
    name: str,
    members: Sequence[MemberSubscription],
    subscription_type: SubscriptionType,
    topics: Mapping[uuid.UUID, TopicMetadata],
) -> dict[str, dict[uuid.UUID, frozenset[int]]]:
    """Run the named assignor; raises :class:`AssignorError` with Java's message when it fails."""
    spec = build_spec(members, subscription_type, topics)
    if name == "range":
        return dict(assign_range(spec))
    if name != "uniform":
        raise ValueError(f"unknown server assignor {name!r}; known: {', '.join(ASSIGNOR_NAMES)}")
    return {
        member_id: _as_dict(spec.members[member_id].assignment) if assignment is None else assignment.to_record()
        for member_id, assignment in assign_uniform(spec).items()
    }


def _as_dict(assignment: Mapping[uuid.UUID, frozenset[int]]) -> dict[uuid.UUID, frozenset[int]]:
    """An untouched member's target as it came (no copy when it is a dict already: 5,000 members)."""
    return assignment if type(assignment) is dict else dict(assignment)
