"""Small builders for the KIP-848 server assignor tests."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence

from rebalance_lab.coordinator.consumer.assignors import (
    MemberSubscription,
    PartitionSet,
    SubscriptionType,
    TopicMetadata,
    assign,
)
from rebalance_lab.coordinator.consumer.assignors.java_order import subscription_name_order

Topics = dict[uuid.UUID, TopicMetadata]
Result = dict[str, dict[str, set[int]]]


def topic_id(n: int) -> uuid.UUID:
    """Deterministic ids: most significant long n+1, least significant 2n+3."""
    return uuid.UUID(int=((n + 1) << 64) | (2 * n + 3))


def topics(**partitions: int) -> Topics:
    """``topics(foo=3, bar=3)``: ids in argument order (``topic_id(0)``, ``topic_id(1)``, ...)."""
    made = {}
    for n, (name, count) in enumerate(partitions.items()):
        made[topic_id(n)] = TopicMetadata(topic_id(n), name, count)
    return made


def member(
    member_id: str,
    names: Sequence[str],
    image: Topics,
    target: Mapping[str, Sequence[int]] | None = None,
    instance_id: str | None = None,
) -> MemberSubscription:
    """A member subscribed to ``names`` (request order) whose current target is ``target`` (name -> partitions,
    in record order)."""
    by_name = {t.name: t.topic_id for t in image.values()}
    assignment = {by_name[name]: PartitionSet(parts) for name, parts in (target or {}).items()}
    ids = frozenset(by_name[n] for n in names if n in by_name)
    return MemberSubscription(member_id, instance_id, None, ids, assignment, subscription_name_order(names))


def subscription_type(members: Sequence[MemberSubscription]) -> SubscriptionType:
    """``ModernGroup.subscriptionType`` by names: homogeneous iff every member subscribes to the same names."""
    names = {frozenset(m.subscription_order or ()) for m in members}
    return SubscriptionType.HOMOGENEOUS if len(names) <= 1 else SubscriptionType.HETEROGENEOUS


def run(name: str, members: Sequence[MemberSubscription], image: Topics) -> Result:
    """Assign and answer by topic name, members without partitions left out."""
    raw = assign(name, members, subscription_type(members), image)
    out: Result = {}
    for member_id, assignment in raw.items():
        by_name = {image[t].name: set(parts) for t, parts in assignment.items() if parts}
        if by_name:
            out[member_id] = by_name
    return out
