"""A read-only snapshot of a group for DescribeGroups-like tooling, tests and the offsets work."""

from __future__ import annotations

from dataclasses import dataclass

from rebalance_lab.coordinator.classic.messages import ProtocolEntry
from rebalance_lab.coordinator.classic.model import Group, Member

CONSUMER_PROTOCOL_TYPE = "consumer"  # the Java consumer's protocol type (``ConsumerProtocol.PROTOCOL_TYPE``)


@dataclass(frozen=True)
class MemberView:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: tuple[ProtocolEntry, ...]
    assignment: bytes
    awaiting_join: bool
    awaiting_sync: bool
    is_new: bool


@dataclass(frozen=True)
class GroupView:
    group_id: str
    state: str
    previous_state: str
    state_timestamp_ms: int
    generation_id: int
    protocol_type: str | None  # None: a simple group (created by an offset commit) or never joined
    protocol_name: str | None
    leader_id: str | None
    members: tuple[MemberView, ...]  # in the coordinator's member iteration order (§7.3)
    pending_members: tuple[str, ...]  # KIP-394 ids that got MEMBER_ID_REQUIRED (not members)
    pending_sync: tuple[str, ...]

    def member(self, member_id: str) -> MemberView | None:
        return next((m for m in self.members if m.member_id == member_id), None)

    def __repr__(self) -> str:
        """Short: a failed assertion on a view prints this, not every member's metadata bytes."""
        return (f"<GroupView {self.group_id!r} {self.state} generation {self.generation_id} protocol "
                f"{self.protocol_name} leader {self.leader_id} members {len(self.members)}>")

    @property
    def uses_consumer_protocol(self) -> bool:
        """``ClassicGroup.usesConsumerGroupProtocol`` (an online upgrade reads it)."""
        return self.protocol_type == CONSUMER_PROTOCOL_TYPE

    def metadata_of(self, member: MemberView) -> bytes | None:
        """The member's metadata for the group's selected protocol (None before a protocol was chosen)."""
        return next((p.metadata for p in member.protocols if p.name == self.protocol_name), None)

    @property
    def member_ids(self) -> tuple[str, ...]:
        return tuple(m.member_id for m in self.members)


def _member_view(m: Member) -> MemberView:
    return MemberView(m.member_id, m.group_instance_id, m.client_id, m.client_host, m.session_timeout_ms,
                      m.rebalance_timeout_ms, m.protocol_type, m.protocols, m.assignment,
                      m.awaiting_join is not None, m.awaiting_sync is not None, m.is_new)


def group_view(group: Group) -> GroupView:
    return GroupView(
        group.group_id, group.state.value, group.previous_state.value, group.state_timestamp_ms,
        group.generation_id, group.protocol_type, group.protocol_name, group.leader_id,
        tuple(_member_view(m) for m in group.members.values()), tuple(sorted(group.pending_join)),
        tuple(sorted(group.pending_sync)),
    )
