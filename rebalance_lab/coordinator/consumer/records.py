"""Records: every state change of a KIP-848 consumer group as a small frozen value (STYLE.md principle 2).

They mirror Kafka 4.4.0's coordinator records (spec/kip848.md §11: member metadata, group
epoch, target assignment, current assignment, regular expression, and their tombstones)
closely enough that :mod:`.apply` rebuilds the group from them alone, and each converts to one
``rbl-event/1`` row with the event types the replay already reads from broker logs
(``replay/epochs.py``): ``MEMBER_JOINED`` (group_kind ``consumer``; also a metadata upsert),
``STATIC_MEMBER_REPLACED``, ``K848_EPOCH_BUMP``, ``K848_TARGET_COMPUTED``,
``K848_MEMBER_STATE``, ``K848_MEMBER_LEFT``, ``K848_MEMBER_FENCED`` and ``GROUP_DEAD`` (deletion).
The group's creation and a regex resolution have no event of their own (``event_type`` "").
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from rebalance_lab.coordinator.consumer.model import ConsumerMember, EpochMap, Partitions, ResolvedRegex
from rebalance_lab.coordinator.records import GroupRecord


@dataclass(frozen=True)
class ConsumerRecord(GroupRecord):
    group_kind: ClassVar[str] = "consumer"


def tp_rows(partitions: Mapping[uuid.UUID, Any], names: Mapping[uuid.UUID, str]) -> list[dict[str, Any]]:
    """``[{topic, partition}]`` by topic name (the id's text when the topic is gone), sorted."""
    rows = [(names.get(t, str(t)), p) for t, parts in partitions.items() for p in parts]
    return [{"topic": t, "partition": p} for t, p in sorted(rows)]


@dataclass(frozen=True)
class GroupCreated(ConsumerRecord):
    """A heartbeat created the group (Kafka writes no record of its own: the first member's records create it).
    No event either: a GROUP_EMPTY row sorts after the same millisecond's join and would empty the replay's
    membership."""

    event_type: ClassVar[str] = ""


@dataclass(frozen=True)
class MemberJoined(ConsumerRecord):
    """A new member's metadata record (``ConsumerGroupMemberMetadata``)."""

    event_type: ClassVar[str] = "MEMBER_JOINED"
    member: ConsumerMember

    def fields(self) -> dict[str, Any]:
        m = self.member
        topics = sorted(m.subscribed_topic_names)
        return {
            "member_id": m.member_id, "group_instance_id": m.instance_id, "client_id": m.client_id,
            "client_host": m.client_host, "rack_id": m.rack_id, "protocol_type": "consumer",
            "rebalance_timeout_ms": m.rebalance_timeout_ms, "protocol": m.server_assignor,
            "subscription": {"topics": topics, "owned": None, "generation": None, "rack": m.rack_id},
        }


@dataclass(frozen=True)
class MemberMetadataUpdated(MemberJoined):
    """A known member's metadata changed (subscription, rack, assignor, client...): an upsert of the member."""


@dataclass(frozen=True)
class StaticMemberReplaced(ConsumerRecord):
    """A static member re-joined under a new member id: the old one's records are deleted and the new one
    takes its metadata, target and current assignment (``GroupMetadataManager.replaceMember``)."""

    event_type: ClassVar[str] = "STATIC_MEMBER_REPLACED"
    old_member_id: str
    member: ConsumerMember
    target: Partitions

    def fields(self) -> dict[str, Any]:
        m = self.member
        return {"member_id": m.member_id, "group_instance_id": m.instance_id, "client_id": m.client_id,
                "client_host": m.client_host, "protocol_type": "consumer", "raw": f"replaced {self.old_member_id}"}


@dataclass(frozen=True)
class GroupEpochBumped(ConsumerRecord):
    """``ConsumerGroupMetadata{epoch, metadataHash}``; ``reason`` says why (not in Kafka's record)."""

    event_type: ClassVar[str] = "K848_EPOCH_BUMP"
    epoch: int
    metadata_hash: tuple[object, ...]
    reason: str  # member_join | member_metadata_change | member_leave | session_timeout | ... | metadata_change
    member_id: str | None = None

    def fields(self) -> dict[str, Any]:
        return {"generation": self.epoch, "reason_code": self.reason, "member_id": self.member_id,
                "protocol_type": "consumer"}


@dataclass(frozen=True)
class TargetAssignmentComputed(ConsumerRecord):
    """The target of ``epoch``: the members whose target changed (``ConsumerGroupTargetAssignmentMember``
    records) and the epoch record (``ConsumerGroupTargetAssignmentMetadata``). ``assignor`` None: the
    metadata reset Kafka writes when the last member leaves (timestamp 0, no computation)."""

    event_type: ClassVar[str] = "K848_TARGET_COMPUTED"
    epoch: int
    assignor: str | None
    timestamp_ms: int | None  # None: Kafka's 0, "never computed"
    targets: Mapping[str, Partitions] = field(default_factory=dict)
    topic_names: Mapping[uuid.UUID, str] = field(default_factory=dict)

    def fields(self) -> dict[str, Any]:
        members = [{"member_id": m, "assignment": tp_rows(t, self.topic_names)} for m, t in self.targets.items()]
        return {"generation": self.epoch, "protocol": self.assignor, "protocol_type": "consumer",
                "members": members or None}


@dataclass(frozen=True)
class MemberAssignmentChanged(ConsumerRecord):
    """``ConsumerGroupCurrentMemberAssignment``: the member's epochs, state and partitions after reconciling."""

    event_type: ClassVar[str] = "K848_MEMBER_STATE"
    member_id: str
    epoch: int
    previous_epoch: int
    state: str  # MemberState name
    assigned: EpochMap
    pending_revocation: EpochMap
    topic_names: Mapping[uuid.UUID, str] = field(default_factory=dict)

    def fields(self) -> dict[str, Any]:
        return {"member_id": self.member_id, "generation": self.epoch, "prev_generation": self.previous_epoch,
                "raw": self.state, "partitions": tp_rows(self.assigned, self.topic_names),
                "partitions_pending_revocation": tp_rows(self.pending_revocation, self.topic_names)}


@dataclass(frozen=True)
class MemberLeft(ConsumerRecord):
    """A leave heartbeat: -1 removes the member (its tombstones), -2 (``temporary``) keeps a static member."""

    event_type: ClassVar[str] = "K848_MEMBER_LEFT"
    member_id: str
    instance_id: str | None
    temporary: bool = False

    def fields(self) -> dict[str, Any]:
        code = "static_temporary_leave" if self.temporary else "member_leave"
        return {"member_id": self.member_id, "group_instance_id": self.instance_id, "reason_code": code}


@dataclass(frozen=True)
class MemberFenced(ConsumerRecord):
    """A member removed by the coordinator (its tombstones): session or rebalance timeout, an operator."""

    event_type: ClassVar[str] = "K848_MEMBER_FENCED"
    member_id: str
    reason: str  # Kafka's text after "fenced from the group because "
    reason_code: str  # session_timeout | rebalance_timeout | other

    def fields(self) -> dict[str, Any]:
        return {"member_id": self.member_id, "reason_raw": self.reason, "reason_code": self.reason_code}


@dataclass(frozen=True)
class RegexResolved(ConsumerRecord):
    """``ConsumerGroupRegularExpression``: a regex's topics (``resolved`` None: its tombstone)."""

    event_type: ClassVar[str] = ""
    regex: str
    resolved: ResolvedRegex | None


@dataclass(frozen=True)
class GroupDeleted(ConsumerRecord):
    event_type: ClassVar[str] = "GROUP_DEAD"
    epoch: int

    def fields(self) -> dict[str, Any]:
        return {"generation": self.epoch, "protocol_type": "consumer"}
