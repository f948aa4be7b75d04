"""A KIP-848 group as the fewest records that rebuild it: what compaction keeps of its history.

Kafka keeps ``__consumer_offsets`` bounded with its log cleaner: the consumer group records are keyed
(``ConsumerGroupMetadata``, ``ConsumerGroupTargetAssignmentMetadata``, and per member
``ConsumerGroupMemberMetadata``, ``ConsumerGroupTargetAssignmentMember`` and
``ConsumerGroupCurrentMemberAssignment``, per regex ``ConsumerGroupRegularExpression``) and only the latest
value of each key survives, tombstones removing keys. :func:`snapshot` writes those latest values from the
live group; folded by :mod:`.apply` into an empty group they give an equal one.

One record is ours, :class:`KeyOrdersRestored`: the iteration orders of the group's two ``TimelineHashMap``
(members, server assignor counts) depend on every put and remove since the group was created (slot
capacity only grows), and the assignors see the members in that order. Restoring them exactly keeps a
compacted group answering as the original would.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rebalance_lab.coordinator.consumer import records as r
from rebalance_lab.coordinator.consumer.assignors.java_order import Slots
from rebalance_lab.coordinator.consumer.model import ConsumerGroup

SNAPSHOT_REASON = "snapshot"  # the GroupEpochBumped reason of a snapshot's group epoch record


@dataclass(frozen=True)
class KeyOrdersRestored(r.ConsumerRecord):
    """Not a Kafka record: the slots of the member and assignor ``TimelineHashMap`` orders, last in a snapshot."""

    event_type: ClassVar[str] = ""
    members: Slots
    assignors: Slots


def snapshot(group: ConsumerGroup, ts_ms: int = 0) -> list[r.ConsumerRecord]:
    """The records that rebuild ``group``: each member's metadata and current assignment (in the member map's
    order), the group epoch with its metadata hash, the target assignment with its epoch and timestamp, the
    resolved regexes, then the key orders."""
    gid = group.group_id
    out: list[r.ConsumerRecord] = []
    for m in group.members.values():
        out.append(r.MemberJoined(gid, ts_ms, m))
        out.append(r.MemberAssignmentChanged(gid, ts_ms, m.member_id, m.member_epoch, m.previous_member_epoch,
                                             m.state.name, m.assigned, m.pending_revocation))
    out.append(r.GroupEpochBumped(gid, ts_ms, group.group_epoch, group.metadata_hash, SNAPSHOT_REASON))
    out.append(r.TargetAssignmentComputed(gid, ts_ms, group.assignment_epoch, None, group.assignment_timestamp_ms,
                                          dict(group.target)))
    out += [r.RegexResolved(gid, ts_ms, regex, resolved) for regex, resolved in group.resolved_regexes.items()]
    out.append(KeyOrdersRestored(gid, ts_ms, group.member_order.slots(), group.assignor_order.slots()))
    return out
