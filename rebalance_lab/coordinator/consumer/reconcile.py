"""Reconciliation: Kafka 4.4.0's ``CurrentAssignmentBuilder`` (spec/kip848.md §5.2, with 4.4's changes).

A member moves toward its target one heartbeat at a time: partitions the target takes away
go to *pending revocation* first and the member stays at its epoch (UNREVOKED_PARTITIONS)
until it reports them gone; then it moves to the target epoch with the partitions it keeps
plus those nobody else holds, waiting (UNRELEASED_PARTITIONS) for the rest.

4.4.0 differs from the 4.0 snapshot the spec read: UNREVOKED members recompute from their own
epoch (no ``+1``); a partition this member itself still has pending revocation is not
"unreleased"; the target is cut to the topics the member subscribes to; a subscription change
while reconciled revokes the unsubscribed topics at once (``updateCurrentAssignment``); every
assigned partition carries the epoch it was assigned at (KIP-1251).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Set
from dataclasses import dataclass
from typing import TypedDict, Unpack

from rebalance_lab.coordinator.consumer.messages import OwnedPartitions
from rebalance_lab.coordinator.consumer.model import (
    ConsumerMember,
    EpochMap,
    MemberState,
    Partitions,
    evolve,
)
from rebalance_lab.protocol.errors import ErrorCode, KafkaError

PartitionEpoch = Callable[[uuid.UUID, int], int]


@dataclass(frozen=True)
class Reconciliation:
    target_epoch: int
    target: Partitions
    subscribed: Set[uuid.UUID]  # the member's subscribed topic ids (names and regex) in the current image
    partition_epoch: PartitionEpoch
    owned: OwnedPartitions | None
    subscription_changed: bool = False


def reconcile(member: ConsumerMember, r: Reconciliation) -> ConsumerMember:
    """``CurrentAssignmentBuilder.build``."""
    state = member.state
    if state is MemberState.STABLE:
        if member.member_epoch != r.target_epoch:
            return _next(member, r, member.member_epoch)
        return _revoke_unsubscribed(member, r) if r.subscription_changed else member
    if state is MemberState.UNREVOKED_PARTITIONS:
        if _owns_any(r.owned, member.pending_revocation):
            return _revoke_unsubscribed(member, r) if r.subscription_changed else member
        return _next(member, r, member.member_epoch)
    if state is MemberState.UNRELEASED_PARTITIONS:
        return _next(member, r, member.member_epoch)
    if r.owned is not None and len(r.owned) == 0:
        return _next(member, r, r.target_epoch)
    raise KafkaError(ErrorCode.FENCED_MEMBER_EPOCH, "The consumer group member is in a unknown state. "
                     "The member must abandon all its partitions and rejoin.")


def _owns_any(owned: OwnedPartitions | None, pending: EpochMap) -> bool:
    """``ownsRevokedPartitions``: a null owned list counts as still owning."""
    if owned is None:
        return True
    return any(p in pending.get(topic_id, {}) for topic_id, partitions in owned for p in partitions)


class _StateChanges(TypedDict, total=False):
    state: MemberState
    assigned: EpochMap
    pending_revocation: EpochMap


def _with_epoch(member: ConsumerMember, epoch: int, **changes: Unpack[_StateChanges]) -> ConsumerMember:
    """``Builder.updateMemberEpoch``: the previous epoch becomes the old one."""
    return evolve(member, member_epoch=epoch, previous_member_epoch=member.member_epoch, **changes)


def _revoke_unsubscribed(member: ConsumerMember, r: Reconciliation) -> ConsumerMember:
    """``updateCurrentAssignment``: topics no longer subscribed leave the assigned set at once."""
    assigned, pending = dict(member.assigned), dict(member.pending_revocation)
    if not r.subscribed and not member.pending_revocation:
        assigned, pending = {}, dict(member.assigned)
    else:
        for topic_id in member.assigned:
            if topic_id not in r.subscribed:
                del assigned[topic_id]
                pending[topic_id] = {**pending.get(topic_id, {}), **member.assigned[topic_id]}
    if assigned == dict(member.assigned):
        return member
    if pending and _owns_any(r.owned, pending):
        return _with_epoch(member, member.member_epoch, state=MemberState.UNREVOKED_PARTITIONS,
                           assigned=assigned, pending_revocation=pending)
    return _with_epoch(member, member.member_epoch, assigned=assigned)


def _next(member: ConsumerMember, r: Reconciliation, epoch: int) -> ConsumerMember:
    """``computeNextAssignment``: revoke first; else move to the target epoch with what is free."""
    assigned: dict[uuid.UUID, dict[int, int]] = {}
    revoke: dict[uuid.UUID, dict[int, int]] = {}
    pending_assignment: dict[uuid.UUID, list[int]] = {}
    unreleased = False
    for topic_id in set(r.target) | set(member.assigned):
        target = r.target.get(topic_id, frozenset()) if topic_id in r.subscribed else frozenset()
        current = member.assigned.get(topic_id, {})
        kept = {p: e for p, e in current.items() if p in target}
        gone = {p: e for p, e in current.items() if p not in kept}
        own_pending = member.pending_revocation.get(topic_id, {})
        wanted = [p for p in target if p not in kept]
        free = [p for p in wanted if r.partition_epoch(topic_id, p) == -1 or p in own_pending]
        unreleased = unreleased or len(free) < len(wanted)
        if kept:
            assigned[topic_id] = kept
        if gone:
            revoke[topic_id] = gone
        if free:
            pending_assignment[topic_id] = free
    if revoke and _owns_any(r.owned, revoke):
        return _with_epoch(member, epoch, state=MemberState.UNREVOKED_PARTITIONS, assigned=assigned,
                           pending_revocation=revoke)
    for topic_id, partitions in pending_assignment.items():
        epochs = assigned.setdefault(topic_id, {})
        for p in partitions:
            epochs[p] = r.target_epoch
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return _with_epoch(member, r.target_epoch, state=state, assigned=assigned, pending_revocation={})
