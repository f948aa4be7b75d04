"""The classic group and member model (Java ``ClassicGroup``/``ClassicGroupMember``, spec §3).

Mutable on purpose: one writer per group (STYLE.md principle 4) changes it inside one
transition, and every change is also emitted as a record. The member map iterates in
the order of the imitated coordinator's hash map (§7.3).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field

from rebalance_lab.config import Flavor
from rebalance_lab.coordinator.classic.messages import ProtocolEntry
from rebalance_lab.coordinator.classic.ordering import OrderedMembers
from rebalance_lab.coordinator.classic.state import GroupState
from rebalance_lab.protocol.errors import ErrorCode


@dataclass
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: tuple[ProtocolEntry, ...]
    assignment: bytes = b""
    awaiting_join: Hashable | None = None  # the token of the parked JoinGroup
    awaiting_sync: Hashable | None = None  # the token of the parked SyncGroup
    is_new: bool = False

    def matches(self, protocols: tuple[ProtocolEntry, ...]) -> bool:
        """Same names in the same order with byte-identical metadata (``CGM.matches``)."""
        return self.protocols == protocols

    def vote(self, candidates: frozenset[str]) -> str | None:
        """The first protocol of this member's own preference list that every member supports."""
        return next((p.name for p in self.protocols if p.name in candidates), None)

    def metadata_for(self, protocol: str | None) -> bytes:
        return next((p.metadata for p in self.protocols if p.name == protocol), b"")

    def has_satisfied_heartbeat(self) -> bool:
        """Java ``hasSatisfiedHeartbeat``: a parked non-new member does not expire (§9.2)."""
        if self.is_new:
            return False
        return self.awaiting_join is not None or self.awaiting_sync is not None


@dataclass
class Group:
    group_id: str
    flavor: Flavor
    state_timestamp_ms: int
    state: GroupState = GroupState.EMPTY
    previous_state: GroupState = GroupState.DEAD  # the placeholder of a new group (§3.1)
    protocol_type: str | None = None
    protocol_name: str | None = None
    generation_id: int = 0
    leader_id: str | None = None
    static_members: dict[str, str] = field(default_factory=dict)
    pending_join: set[str] = field(default_factory=set)
    pending_sync: set[str] = field(default_factory=set)
    new_member_added: bool = False
    members: OrderedMembers[Member] = field(init=False)

    def __post_init__(self) -> None:
        self.members = OrderedMembers(self.flavor)

    # -- state -------------------------------------------------------------------------

    def transition_to(self, target: GroupState, now_ms: int) -> None:
        self.state.check_transition_to(target)  # raises before anything changes
        self.previous_state = self.state
        self.state = target
        self.state_timestamp_ms = now_ms

    def in_state(self, *states: GroupState) -> bool:
        return self.state in states

    # -- derived values (§3.3) -----------------------------------------------------------

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def num_awaiting_join(self) -> int:
        return sum(1 for m in self.members.values() if m.awaiting_join is not None)

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_awaiting_join() and not self.pending_join

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def protocol_counts(self) -> dict[str, int]:
        """``supportedProtocols``: per listed entry, so a member's own current list counts too."""
        counts: dict[str, int] = {}
        for member in self.members.values():
            for protocol in member.protocols:
                counts[protocol.name] = counts.get(protocol.name, 0) + 1
        return counts

    def supports_protocols(self, protocol_type: str, names: list[str]) -> bool:
        if self.state is GroupState.EMPTY:
            return protocol_type != "" and bool(names)
        counts = self.protocol_counts()
        size = len(self.members)
        return protocol_type == self.protocol_type and any(counts.get(n, 0) == size for n in names)

    def candidates(self) -> list[str]:
        """Protocol names listed by every member, in the first member's preference order."""
        counts, size = self.protocol_counts(), len(self.members)
        names = [p.name for m in self.members.values() for p in m.protocols]
        return [n for n in dict.fromkeys(names) if counts[n] == size]

    # -- membership (CG.add / CG.remove) ------------------------------------------------

    def add(self, member: Member) -> None:
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if len(self.members) == 0:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members.put(member.member_id, member)
        self.pending_join.discard(member.member_id)

    def remove(self, member_id: str) -> Member | None:
        """Drop a member (or a pending id); a removed leader hands over to the first key (§3.5)."""
        member = self.members.pop(member_id)
        instance_id = member.group_instance_id if member is not None else None
        if instance_id is not None and self.static_members.get(instance_id) == member_id:
            del self.static_members[instance_id]
        if self.leader_id == member_id:
            self.leader_id = self.members.first_key()
        self.pending_join.discard(member_id)
        self.pending_sync.discard(member_id)
        return member

    def validate_member(self, member_id: str, group_instance_id: str | None) -> ErrorCode:
        """``CG.validateMember``: instance unknown 25, instance fenced 82, then member unknown 25."""
        if group_instance_id is not None:
            mapped = self.static_members.get(group_instance_id)
            if mapped is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if mapped != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        if member_id not in self.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return ErrorCode.NONE
