"""Helpers for the sans-I/O member tests: a member state, canned responses, a toy assignor."""

from __future__ import annotations

from rebalance_lab.clients.assignors.types import (
    Assignment,
    ClusterView,
    GroupSubscription,
    TopicPartition,
)
from rebalance_lab.clients.member import calls as c
from rebalance_lab.clients.member.state import MemberState
from rebalance_lab.clients.member.subscription import SubscriptionSpec
from rebalance_lab.protocol import consumer_protocol as cp
from rebalance_lab.protocol.errors import ErrorCode


class FirstTakesAll:
    """A toy assignor: the first member (in input order) gets every partition."""

    name = "toy"

    def assign(self, cluster: ClusterView, group: GroupSubscription) -> dict[str, Assignment]:
        first = next(iter(group.members))
        partitions = tuple(TopicPartition(t, p.partition) for t, metas in cluster.topics.items() for p in metas)
        return {first: Assignment(partitions)}


def assignment_bytes(*partitions: tuple[str, int]) -> bytes:
    return cp.encode_assignment(Assignment(tuple(TopicPartition(t, p) for t, p in partitions)))


def make_state(assignors: tuple[str, ...] = ("range",), instance: str | None = None) -> MemberState:
    return MemberState(
        session_timeout_ms=10_000,
        rebalance_timeout_ms=20_000,
        subscription=SubscriptionSpec(("t",), assignors),
        group_instance_id=instance,
    )


def joined(
    member_id: str,
    leader: str,
    generation: int = 1,
    protocol: str = "range",
    members: tuple[c.JoinedMember, ...] = (),
    skip_assignment: bool = False,
) -> c.JoinGroupResult:
    return c.JoinGroupResult(ErrorCode.NONE, member_id, generation, protocol, leader, members, skip_assignment)


def stable(state: MemberState, member_id: str = "m-1", *partitions: tuple[str, int], generation: int = 1) -> c.Assigned:
    """Drive ``state`` from UNJOINED to STABLE as a follower of ``other``."""
    state.start_join()
    step = state.on_join_result(joined(member_id, "other", generation))
    assert isinstance(step, c.SendSync)
    result = state.on_sync_result(c.SyncGroupResult(ErrorCode.NONE, assignment_bytes(*partitions), "range"))
    assert isinstance(result, c.Assigned)
    return result
