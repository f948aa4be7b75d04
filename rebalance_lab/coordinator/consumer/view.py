"""Frozen views of a consumer group for inspection (tests, the control endpoint, the toolkit)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from rebalance_lab.coordinator.consumer.model import ConsumerGroup, ConsumerMember, EpochMap, Partitions

TopicPartitions = dict[uuid.UUID, tuple[int, ...]]


def _sorted(assignment: EpochMap | Partitions) -> TopicPartitions:
    return {t: tuple(sorted(ps)) for t, ps in assignment.items() if ps}


@dataclass(frozen=True)
class ConsumerMemberView:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    member_epoch: int
    previous_member_epoch: int
    state: str  # STABLE | UNREVOKED_PARTITIONS | UNRELEASED_PARTITIONS | UNKNOWN
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str
    server_assignor: str | None
    rebalance_timeout_ms: int
    assigned: TopicPartitions
    pending_revocation: TopicPartitions
    target: TopicPartitions
    uses_classic_protocol: bool


@dataclass(frozen=True)
class ConsumerGroupView:
    group_id: str
    state: str
    group_epoch: int
    assignment_epoch: int
    preferred_assignor: str | None
    members: tuple[ConsumerMemberView, ...]
    group_type: str = "consumer"

    def member(self, member_id: str) -> ConsumerMemberView | None:
        return next((m for m in self.members if m.member_id == member_id), None)

    def __repr__(self) -> str:
        """Short: a failed assertion on a view prints this, not every member's partitions."""
        return (f"<ConsumerGroupView {self.group_id!r} {self.state} epoch {self.group_epoch} assignment epoch "
                f"{self.assignment_epoch} members {len(self.members)}>")


def member_view(group: ConsumerGroup, m: ConsumerMember) -> ConsumerMemberView:
    return ConsumerMemberView(
        m.member_id, m.instance_id, m.rack_id, m.client_id, m.client_host, m.member_epoch,
        m.previous_member_epoch, m.state.name, tuple(sorted(m.subscribed_topic_names)), m.subscribed_topic_regex,
        m.server_assignor, m.rebalance_timeout_ms, _sorted(m.assigned), _sorted(m.pending_revocation),
        _sorted(group.target.get(m.member_id, {})), m.uses_classic_protocol,
    )


def group_view(group: ConsumerGroup) -> ConsumerGroupView:
    return ConsumerGroupView(group.group_id, group.state.value, group.group_epoch, group.assignment_epoch,
                             group.preferred_assignor(), tuple(member_view(group, m) for m in group.members.values()))
