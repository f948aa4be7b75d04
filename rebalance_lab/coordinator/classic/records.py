"""Records: every state change of a classic group as a small frozen value (STYLE.md principle 2).

The core emits them in :class:`~rebalance_lab.coordinator.effects.Effects` in the
order the changes happen. They carry what a narrator needs (who joined with which
protocols, the candidates, each vote and the winner, the leader, who got which bytes,
why a rebalance started) and each converts to one row of the canonical event schema
(spec/replay-inputs.md §7.1) with :meth:`GroupRecord.to_event`. Assignment bytes stay
raw here; decoding them into partitions is the recorder's job.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

from rebalance_lab.coordinator.records import SCHEMA_VERSION as SCHEMA_VERSION
from rebalance_lab.coordinator.records import GroupRecord as GroupRecord
from rebalance_lab.coordinator.records import _iso as _iso


@dataclass(frozen=True)
class GroupCreated(GroupRecord):
    """A group came into existence in Empty (first JoinGroup, or a simple-group offset commit)."""

    event_type: ClassVar[str] = "GROUP_EMPTY"
    cause: str  # "join" | "offset_commit"

    def fields(self) -> dict[str, Any]:
        return {"generation": 0, "reason_raw": f"group created by {self.cause}", "reason_code": "group_created"}


@dataclass(frozen=True)
class PendingMemberAdded(GroupRecord):
    """KIP-394: a v4+ dynamic member got MEMBER_ID_REQUIRED with this id (not yet a member)."""

    event_type: ClassVar[str] = "MEMBER_JOIN_REQUEST"
    member_id: str
    client_id: str
    client_host: str
    session_timeout_ms: int
    protocols: tuple[str, ...]

    def fields(self) -> dict[str, Any]:
        return {
            "member_id": self.member_id, "client_id": self.client_id, "client_host": self.client_host,
            "session_timeout_ms": self.session_timeout_ms, "supported_protocols": list(self.protocols),
            "reason_raw": "member id required", "reason_code": "member_id_required",
        }


@dataclass(frozen=True)
class MemberJoined(GroupRecord):
    """A member was added to the group (``CG.add``); its protocols are in preference order."""

    event_type: ClassVar[str] = "MEMBER_JOINED"
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    session_timeout_ms: int
    rebalance_timeout_ms: int
    generation: int
    became_leader: bool

    def fields(self) -> dict[str, Any]:
        return {
            "member_id": self.member_id, "group_instance_id": self.group_instance_id,
            "client_id": self.client_id, "client_host": self.client_host,
            "protocol_type": self.protocol_type, "supported_protocols": [n for n, _ in self.protocols],
            "session_timeout_ms": self.session_timeout_ms, "rebalance_timeout_ms": self.rebalance_timeout_ms,
            "generation": self.generation,
        }


@dataclass(frozen=True)
class MemberRejoined(GroupRecord):
    """An existing member sent JoinGroup again (its protocols may have changed)."""

    event_type: ClassVar[str] = "MEMBER_JOIN_REQUEST"
    member_id: str
    group_instance_id: str | None
    protocols: tuple[tuple[str, bytes], ...]
    metadata_changed: bool
    state: str
    generation: int

    def fields(self) -> dict[str, Any]:
        return {
            "member_id": self.member_id, "group_instance_id": self.group_instance_id,
            "supported_protocols": [n for n, _ in self.protocols], "generation": self.generation,
            "reason_code": "member_metadata_change" if self.metadata_changed else "member_rejoin",
        }


@dataclass(frozen=True)
class StaticMemberReplaced(GroupRecord):
    """KIP-345: a known group.instance.id joined with memberId "" and took over the old member."""

    event_type: ClassVar[str] = "STATIC_MEMBER_REPLACED"
    group_instance_id: str
    old_member_id: str
    new_member_id: str
    protocols: tuple[tuple[str, bytes], ...]
    generation: int
    leader_id: str | None

    def fields(self) -> dict[str, Any]:
        return {
            "member_id": self.new_member_id, "group_instance_id": self.group_instance_id,
            "supported_protocols": [n for n, _ in self.protocols], "generation": self.generation,
            "leader_id": self.leader_id, "raw": f"replaced {self.old_member_id}",
        }


@dataclass(frozen=True)
class RebalancePrepared(GroupRecord):
    """``prepareRebalance``: why (Kafka's reason text and its §2.3 code) and from which state.

    ``generation`` is the group's generation when the rebalance starts (the "old generation"
    of the broker's log line). The event row follows the canonical convention instead
    (spec/replay-inputs.md §6.5, §7.1): ``prev_generation`` is that old generation and
    ``generation`` the one being formed, old + 1.
    """

    event_type: ClassVar[str] = "REBALANCE_PREPARE"
    reason: str
    reason_code: str
    from_state: str
    generation: int
    initial_delay_ms: int | None  # set when the rebalance starts from Empty (§6)

    def fields(self) -> dict[str, Any]:
        return {"reason_raw": self.reason, "reason_code": self.reason_code,
                "prev_generation": self.generation, "generation": self.generation + 1}


@dataclass(frozen=True)
class MemberRemoved(GroupRecord):
    """A member left the group; ``cause`` says how (subclasses fix the event type)."""

    member_id: str
    group_instance_id: str | None
    cause: str
    new_leader_id: str | None  # the leader after removal (``CG.remove`` picks the first key, §3.5)

    def fields(self) -> dict[str, Any]:
        return {
            "member_id": self.member_id, "group_instance_id": self.group_instance_id,
            "reason_code": self.cause, "leader_id": self.new_leader_id,
        }


@dataclass(frozen=True)
class MemberLeft(MemberRemoved):
    event_type: ClassVar[str] = "MEMBER_LEFT"  # LeaveGroup, max-size kick, pending-sync expiry


@dataclass(frozen=True)
class MemberExpired(MemberRemoved):
    event_type: ClassVar[str] = "MEMBER_SESSION_EXPIRED"  # session or new-member join timeout


@dataclass(frozen=True)
class PendingMemberExpired(GroupRecord):
    event_type: ClassVar[str] = "PENDING_MEMBER_EXPIRED"
    member_id: str
    cause: str  # "timeout" | "leave"

    def fields(self) -> dict[str, Any]:
        return {"member_id": self.member_id, "reason_code": self.cause}


@dataclass(frozen=True)
class MembersDroppedNotRejoined(GroupRecord):
    """Join completion removed the dynamic members that did not rejoin (§5.5 step 2)."""

    event_type: ClassVar[str] = "MEMBERS_DROPPED_NOT_REJOINED"
    member_ids: tuple[str, ...]
    generation: int

    def fields(self) -> dict[str, Any]:
        return {"raw": ",".join(self.member_ids), "n_members": len(self.member_ids), "generation": self.generation}


@dataclass(frozen=True)
class GenerationStarted(GroupRecord):
    """Join phase completed with members: generation, candidates, every vote, winner, leader."""

    event_type: ClassVar[str] = "JOIN_COMPLETE"
    generation: int
    protocol_type: str | None
    candidates: tuple[str, ...]
    votes: tuple[tuple[str, str], ...]  # (member id, voted protocol) in member iteration order
    protocol: str
    leader_id: str
    members: tuple[tuple[str, str | None], ...]  # (member id, instance id) in iteration order
    not_rejoined: tuple[str, ...]  # static members kept without a parked JoinGroup

    def fields(self) -> dict[str, Any]:
        return {
            "generation": self.generation, "prev_generation": self.generation - 1,
            "protocol_type": self.protocol_type, "protocol": self.protocol, "leader_id": self.leader_id,
            "supported_protocols": list(self.candidates), "n_members": len(self.members),
            "n_static": sum(1 for _, i in self.members if i is not None),
        }


@dataclass(frozen=True)
class GroupEmpty(GroupRecord):
    """The group went Empty (join completed with no members; generation still incremented)."""

    event_type: ClassVar[str] = "GROUP_EMPTY"
    generation: int

    def fields(self) -> dict[str, Any]:
        return {"generation": self.generation, "n_members": 0}


@dataclass(frozen=True)
class AssignmentStored(GroupRecord):
    """The leader's SyncGroup assignment was stored; members it omitted got empty bytes."""

    event_type: ClassVar[str] = "SYNC_LEADER_ASSIGNMENT"
    generation: int
    leader_id: str
    protocol: str | None
    assignments: tuple[tuple[str, bytes], ...]  # every member, in iteration order
    missing: tuple[str, ...]

    def fields(self) -> dict[str, Any]:
        return {
            "generation": self.generation, "leader_id": self.leader_id, "protocol": self.protocol,
            "n_members": len(self.assignments),
        }


class SnapshotMember(NamedTuple):
    """A NamedTuple, frozen like the records: a snapshot makes one per member (a frozen dataclass set each of its
    eight fields through object.__setattr__, ~6 us a member in a 10,000-member group's every sync: issue 22)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    metadata: bytes  # the selected protocol's metadata (consumer Subscription bytes)
    assignment: bytes  # raw consumer Assignment bytes


@dataclass(frozen=True)
class GenerationSnapshot(GroupRecord):
    """The group right after a completed sync (Stable): members, metadata and raw assignments."""

    event_type: ClassVar[str] = "GENERATION_SNAPSHOT"
    generation: int
    protocol_type: str | None
    protocol: str | None
    leader_id: str | None
    members: tuple[SnapshotMember, ...]

    def fields(self) -> dict[str, Any]:
        return {
            "generation": self.generation, "protocol_type": self.protocol_type, "protocol": self.protocol,
            "leader_id": self.leader_id, "n_members": len(self.members),
            "n_static": sum(1 for m in self.members if m.group_instance_id is not None),
            "members": [
                {
                    "member_id": m.member_id, "group_instance_id": m.group_instance_id,
                    "client_id": m.client_id, "client_host": m.client_host, "rack_id": None,
                    "session_timeout_ms": m.session_timeout_ms,
                    "rebalance_timeout_ms": m.rebalance_timeout_ms,
                    # decoded later from the raw bytes by the recorder (consumer protocol)
                    "topics": None, "owned": None, "assignment": None,
                }
                for m in self.members
            ],
        }


@dataclass(frozen=True)
class GroupDeleted(GroupRecord):
    """DeleteGroups (or the retention sweep) removed an Empty group and its offsets."""

    event_type: ClassVar[str] = "GROUP_DEAD"
    generation: int

    def fields(self) -> dict[str, Any]:
        return {"generation": self.generation}


@dataclass(frozen=True)
class GroupUpgraded(GroupRecord):
    """The classic group became a KIP-848 consumer group of the same id (online upgrade, or an Empty group
    converted by a consumer-protocol join); its offsets stay. For the classic fold the group ends here."""

    event_type: ClassVar[str] = "GROUP_DEAD"
    generation: int
    cause: str  # "protocol_upgrade" | "empty_group_conversion"

    def fields(self) -> dict[str, Any]:
        return {"generation": self.generation, "reason_code": self.cause,
                "reason_raw": "converted to a consumer group"}


@dataclass(frozen=True)
class GroupDowngraded(GroupRecord):
    """A consumer group became this classic group, Stable at generation = its epoch (online downgrade);
    a :class:`GenerationSnapshot` with the members and their assignments follows."""

    event_type: ClassVar[str] = "GROUP_LOADED"
    generation: int
    protocol: str
    leader_id: str
    n_members: int

    def fields(self) -> dict[str, Any]:
        return {"generation": self.generation, "protocol": self.protocol, "leader_id": self.leader_id,
                "n_members": self.n_members, "protocol_type": "consumer", "reason_code": "protocol_downgrade",
                "reason_raw": "converted from a consumer group"}


@dataclass(frozen=True)
class JoinRefused(GroupRecord):
    """A JoinGroup answered with an error that changes nothing (issue 19: the incident people meet first in a
    rolling assignor change is INCONSISTENT_GROUP_PROTOCOL, which left no trace before). ``group_protocols``
    are the names every current member offers (what the joiner had to share one of)."""

    event_type: ClassVar[str] = "MEMBER_JOIN_REFUSED"
    member_id: str
    group_instance_id: str | None
    client_id: str
    protocols: tuple[str, ...]
    error: str  # the ErrorCode name
    state: str
    generation: int
    group_protocols: tuple[str, ...]

    def fields(self) -> dict[str, Any]:
        return {
            "member_id": self.member_id or None, "group_instance_id": self.group_instance_id,
            "client_id": self.client_id, "supported_protocols": list(self.protocols), "reason_code": self.error,
            "generation": self.generation, "raw": ",".join(self.group_protocols),
        }


@dataclass(frozen=True)
class RebalanceNotified(GroupRecord):
    """A member's heartbeat was answered REBALANCE_IN_PROGRESS: how a follower learns of a rebalance. Recorded
    once per member per rebalance (the first such answer), not for every heartbeat."""

    event_type: ClassVar[str] = "MEMBER_REBALANCE_NOTIFIED"
    member_id: str
    generation: int  # the generation the member is still in

    def fields(self) -> dict[str, Any]:
        return {"member_id": self.member_id, "generation": self.generation,
                "reason_code": "REBALANCE_IN_PROGRESS"}


@dataclass(frozen=True)
class InitialDelayExtended(GroupRecord):
    """``group.initial.rebalance.delay.ms`` ran out while new members were still arriving: the join waits
    ``delay_ms`` more (at most the rest of the rebalance timeout, ``remaining_ms`` after this one)."""

    event_type: ClassVar[str] = "REBALANCE_DELAY_EXTENDED"
    generation: int
    delay_ms: int
    remaining_ms: int

    def fields(self) -> dict[str, Any]:
        return {"prev_generation": self.generation, "generation": self.generation + 1,
                "reason_code": "initial_delay_extended",
                "reason_raw": f"new members joined during the initial delay; waiting {self.delay_ms} ms more"}
