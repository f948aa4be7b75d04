"""Uniform assignor, every member subscribed to the same topics (Kafka 4.4.0 ``UniformHomogeneousAssignmentBuilder``).

Sticky to the previous target: each member keeps up to its quota of its current partitions, in the
order its Java map and sets iterate (so the lowest-bucketed partitions stay), the rest and the
never-assigned partitions are dealt to the members left short, in member order.

4.4.0 differs from the spec's 4.0 snapshot in who gets the ``+1`` quotas: a member takes an extra slot
only while it still needs it, i.e. a member that already holds no more than the minimum quota gives its
extra slot back as long as enough members remain to take the remaining extras
(``memberCount - memberIndex > remainingMembersToGetAnExtraPartition``).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from rebalance_lab.coordinator.consumer.assignors.java_maps import IntSet, JavaAssignment
from rebalance_lab.coordinator.consumer.assignors.java_order import uuid_string
from rebalance_lab.coordinator.consumer.assignors.spec import GroupSpec
from rebalance_lab.coordinator.consumer.assignors.types import AssignorError


@dataclass
class _Builder:
    spec: GroupSpec
    topic_ids: list[uuid.UUID]
    unassigned: list[tuple[uuid.UUID, int]] = field(default_factory=list)
    unfilled: list[tuple[str, int]] = field(default_factory=list)
    target: dict[str, JavaAssignment | None] = field(default_factory=dict)  # None: the stored one, untouched
    min_quota: int = 0
    extras_left: int = 0


def assign_homogeneous(spec: GroupSpec) -> dict[str, JavaAssignment | None]:
    """``UniformHomogeneousAssignmentBuilder.build``; an empty result when nothing is subscribed, ``None``
    for a member whose target is the stored one."""
    topic_ids = spec.subscribed_id_set_order(spec.member_ids[0])
    if not topic_ids:
        return {}
    builder = _Builder(spec, topic_ids)
    total = 0
    for topic_id in topic_ids:
        count = spec.num_partitions(topic_id)
        if count == -1:
            raise AssignorError(
                f"Members are subscribed to topic {uuid_string(topic_id)} which doesn't exist in the topic metadata."
            )
        taken = spec.assigned_partitions(topic_id)
        builder.unassigned.extend((topic_id, p) for p in range(count) if p not in taken)
        total += count
    members = len(spec.member_ids)
    builder.min_quota, builder.extras_left = divmod(total, members)
    _revoke(builder)
    _assign_remaining(builder)
    return builder.target


def _revoke(b: _Builder) -> None:
    """``maybeRevokePartitions``: keep up to the quota of each member's target, free the rest."""
    subscribed = set(b.topic_ids)
    member_count = len(b.spec.member_ids)
    for index, member_id in enumerate(b.spec.member_ids):
        quota = b.min_quota
        has_extra = b.extras_left > 0
        if has_extra:
            quota += 1
        kept = _kept_whole(b.spec.members[member_id].assignment, subscribed, quota)
        if kept is not None:  # every topic fits: the walk's order cannot matter
            quota -= kept
            new = None
        else:
            quota, new = _revoke_in_java_order(b, member_id, subscribed, quota)
        if quota > 0 and has_extra and member_count - index > b.extras_left:
            quota -= 1
            has_extra = False
        if quota > 0:
            b.unfilled.append((member_id, quota))
        if has_extra:
            b.extras_left -= 1
        b.target[member_id] = new


def _kept_whole(assignment: Mapping[uuid.UUID, frozenset[int]], subscribed: set[uuid.UUID], quota: int) -> int | None:
    """The member's partition count if it keeps all of them (all subscribed, within the quota), else None."""
    total = 0
    for topic_id, partitions in assignment.items():
        if topic_id not in subscribed:
            return None
        total += len(partitions)
    return total if total <= quota else None


def _revoke_in_java_order(
    b: _Builder, member_id: str, subscribed: set[uuid.UUID], quota: int
) -> tuple[int, JavaAssignment | None]:
    """The Java walk over the member's map: whole topics while they fit, then set order decides."""
    old = b.spec.stored(member_id)
    new: JavaAssignment | None = None
    for topic_id, partitions in old.items():
        if topic_id not in subscribed:
            new = new or old.deep_copy()
            new.table.remove(topic_id)
        elif len(partitions) <= quota:
            quota -= len(partitions)
        else:
            new = new or old.deep_copy()
            quota = _keep_quota(b, new, topic_id, partitions, quota)
    return quota, new


def _keep_quota(b: _Builder, new: JavaAssignment, topic_id: uuid.UUID, partitions: IntSet, quota: int) -> int:
    """Keep the first ``quota`` partitions in set order, free the others; returns what is left (0)."""
    for partition in list(partitions.keys()):
        if quota > 0:
            quota -= 1
            continue
        parts = new.table.get(topic_id)
        assert parts is not None
        parts.remove(partition)
        if not len(parts):
            new.table.remove(topic_id)
        b.unassigned.append((topic_id, partition))
    return quota


def _assign_remaining(b: _Builder) -> None:
    """``assignRemainingPartitions``: members left short take the free partitions in list order."""
    cursor = 0
    pending = b.unassigned
    for member_id, remaining in b.unfilled:
        assignment = (b.target[member_id] or b.spec.stored(member_id)).mutable()
        b.target[member_id] = assignment
        table = assignment.table
        for topic_id, partition in pending[cursor : cursor + remaining]:
            table.compute_if_absent(topic_id, _new_set).add(partition)
        cursor = min(cursor + remaining, len(pending))
    if cursor < len(pending):
        raise AssignorError("Partitions were left unassigned")


def _new_set(_topic_id: uuid.UUID) -> IntSet:
    return IntSet()  # computeIfAbsent(topicId, __ -> new HashSet<>())
