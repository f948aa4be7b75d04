"""The classic group and member model (Java ``ClassicGroup``/``ClassicGroupMember``, spec §3).

Mutable on purpose: one writer per group (STYLE.md principle 4) changes it inside one
transition, and every change is also emitted as a record. The member map iterates in
the order of the imitated coordinator's hash map (§7.3).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from rebalance_lab.config import Flavor
from rebalance_lab.coordinator.classic.messages import ProtocolEntry
from rebalance_lab.coordinator.classic.ordering import OrderedMembers
from rebalance_lab.coordinator.classic.state import GroupState
from rebalance_lab.protocol.errors import ErrorCode


@dataclass(slots=True)  # slotted: its fields are read many times a request, and it is one object, not two
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
    awaiting_join: Hashable | None = None  # the token of the parked JoinGroup (set it with park_join)
    awaiting_sync: Hashable | None = None  # the token of the parked SyncGroup
    is_new: bool = False
    # The counts of the group holding this member, kept as the member changes (None while in no group).
    tally: Tally | None = field(default=None, repr=False, compare=False)

    def park_join(self, token: Hashable | None) -> None:
        """Park (or, with None, answer) this member's JoinGroup; the group's awaiting count follows."""
        if self.tally is not None:
            self.tally.awaiting += (token is not None) - (self.awaiting_join is not None)
        self.awaiting_join = token

    def update(self, protocols: tuple[ProtocolEntry, ...], rebalance_timeout_ms: int,
               session_timeout_ms: int) -> None:
        """``CG.updateMember``'s field changes, with the group's protocol counts and timeouts kept."""
        tally = self.tally
        unchanged = protocols == self.protocols and rebalance_timeout_ms == self.rebalance_timeout_ms
        if tally is not None and not unchanged:  # a rejoin with the same list (the usual one) counts nothing
            tally.count(self, -1)
        self.protocols, self.rebalance_timeout_ms = protocols, rebalance_timeout_ms
        self.session_timeout_ms = session_timeout_ms
        if tally is not None and not unchanged:
            tally.count(self, 1)

    def matches(self, protocols: tuple[ProtocolEntry, ...]) -> bool:
        """Same names in the same order with byte-identical metadata (``CGM.matches``)."""
        return self.protocols == protocols

    def vote(self, candidates: frozenset[str]) -> str | None:
        """The first protocol of this member's own preference list that every member supports."""
        for name, _metadata in self.protocols:  # loops, not next() over a generator: once per member (issue 22)
            if name in candidates:
                return name
        return None

    def metadata_for(self, protocol: str | None) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        return b""

    def has_satisfied_heartbeat(self) -> bool:
        """Java ``hasSatisfiedHeartbeat``: a parked non-new member does not expire (§9.2)."""
        if self.is_new:
            return False
        return self.awaiting_join is not None or self.awaiting_sync is not None


class Tally:
    """A group's counts over its members, kept as members come, go and change (Java ``ClassicGroup`` keeps
    ``numMembersAwaitingJoinResponse`` and ``supportedProtocols`` the same way), so no JoinGroup scans the group."""

    __slots__ = ("awaiting", "protocols", "repeats", "timeouts")

    def __init__(self) -> None:
        self.awaiting = 0  # members with a parked JoinGroup
        self.protocols: dict[str, int] = {}  # per listed entry, so a member's own current list counts too
        self.timeouts: dict[int, int] = {}  # rebalance timeout -> how many members have it
        self.repeats = 0  # members listing a protocol name twice (no real client does; see Group.candidates)

    def count(self, member: Member, sign: int) -> None:
        for protocol in member.protocols:
            self._bump(self.protocols, protocol.name, sign)
        self._bump(self.timeouts, member.rebalance_timeout_ms, sign)
        if len(member.protocols) > 1 and len({p.name for p in member.protocols}) < len(member.protocols):
            self.repeats += sign

    @staticmethod
    def _bump(counts: dict[Any, int], key: Any, sign: int) -> None:
        value = counts.get(key, 0) + sign
        if value:
            counts[key] = value
        else:
            del counts[key]

    def attach(self, member: Member) -> None:
        member.tally = self
        self.count(member, 1)
        self.awaiting += member.awaiting_join is not None

    def detach(self, member: Member) -> None:
        self.count(member, -1)
        self.awaiting -= member.awaiting_join is not None
        member.tally = None


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
    tally: Tally = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.members = OrderedMembers(self.flavor)
        self.tally = Tally()

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
        return max(self.tally.timeouts, default=0)  # distinct timeouts: a handful, whatever the group's size

    def num_awaiting_join(self) -> int:
        return self.tally.awaiting

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_awaiting_join() and not self.pending_join

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def protocol_counts(self) -> dict[str, int]:
        """``supportedProtocols``: per listed entry, so a member's own current list counts too."""
        return self.tally.protocols

    def supports_protocols(self, protocol_type: str, protocols: tuple[ProtocolEntry, ...]) -> bool:
        """``CG.supportsProtocols``: a type and at least one protocol name every member lists."""
        if self.state is GroupState.EMPTY:
            return protocol_type != "" and bool(protocols)
        if protocol_type != self.protocol_type:
            return False
        counts, size = self.tally.protocols, len(self.members)
        for protocol in protocols:  # noqa: SIM110  # a loop, not any() over a generator: every JoinGroup asks
            if counts.get(protocol.name, 0) == size:
                return True
        return False

    def candidates(self) -> list[str]:
        """Protocol names listed by every member, in the first member's preference order.

        A name every member lists is in the first member's list, so that list alone says which (no scan of
        the group) — unless some member lists a name twice: then the per-entry count can reach the group's
        size without every member listing it, and the names of every member are read, as before.
        """
        counts, size = self.protocol_counts(), len(self.members)
        first = self.members.first_key()
        if self.tally.repeats or first is None:
            names = [p.name for m in self.members.values() for p in m.protocols]
        else:
            names = [p.name for p in self.members[first].protocols]
        return [n for n in dict.fromkeys(names) if counts[n] == size]

    # -- membership (CG.add / CG.remove) ------------------------------------------------

    def add(self, member: Member) -> None:
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if len(self.members) == 0:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        old = self.members.get(member.member_id)
        if old is not None:
            self.tally.detach(old)
        self.members.put(member.member_id, member)
        self.tally.attach(member)
        self.pending_join.discard(member.member_id)

    def replace_member(self, old_id: str, new: Member) -> None:
        """A static member's new id takes the old one's place (the old is removed, the new added last)."""
        old = self.members.pop(old_id)
        if old is not None:
            self.tally.detach(old)
        self.members.put(new.member_id, new)
        self.tally.attach(new)

    def remove(self, member_id: str) -> Member | None:
        """Drop a member (or a pending id); a removed leader hands over to the first key (§3.5)."""
        member = self.members.pop(member_id)
        if member is not None:
            self.tally.detach(member)
        instance_id = member.group_instance_id if member is not None else None
        if instance_id is not None and self.static_members.get(instance_id) == member_id:
            del self.static_members[instance_id]
        if self.leader_id == member_id:
            self.leader_id = self.members.first_key()
        self.pending_join.discard(member_id)
        self.pending_sync.discard(member_id)
        return member

    def check_tally(self) -> None:
        """Raise when the kept counts differ from a full scan (the tests call this after every step)."""
        scan = Tally()
        for member in self.members.values():
            scan.count(member, 1)
            scan.awaiting += member.awaiting_join is not None
            if member.tally is not self.tally:
                raise AssertionError(f"member {member.member_id} is not counted by its group {self.group_id}")
        kept = (self.tally.awaiting, self.tally.protocols, self.tally.timeouts, self.tally.repeats)
        if kept != (scan.awaiting, scan.protocols, scan.timeouts, scan.repeats):
            raise AssertionError(f"group {self.group_id}: kept counts {kept} != scanned "
                                 f"{(scan.awaiting, scan.protocols, scan.timeouts, scan.repeats)}")
        self.members.check_order()

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
