"""What the group leader does between JoinGroup and SyncGroup: run an assignor.

Java's ``ConsumerCoordinator.onLeaderElected``: decode every member's subscription for
the selected protocol, attach each member's ``group.instance.id`` (it is not inside the
subscription bytes, spec assignors.md §1), run the assignor on the cluster metadata,
and serialise one assignment per member. Members the assignor leaves out get an empty
assignment so that every member receives a well-formed answer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence

from rebalance_lab.clients.assignors.types import (
    Assignment,
    Assignor,
    ClusterView,
    GroupSubscription,
    Subscription,
)
from rebalance_lab.clients.member.calls import JoinedMember
from rebalance_lab.protocol import consumer_protocol as cp


class AssignorNotFound(LookupError):
    pass


def resolve_assignor(name: str) -> Assignor:
    """``rebalance_lab.clients.assignors.get_assignor(name)`` (imported at call time: the
    registry imports every assignor, which a member with explicit assignor objects never needs)."""
    from rebalance_lab.clients.assignors import get_assignor

    try:
        return get_assignor(name)
    except (KeyError, ValueError) as exc:
        raise AssignorNotFound(f"no assignor named {name!r}") from exc


def group_subscription(members: Sequence[JoinedMember]) -> GroupSubscription:
    """The leader's input, in JoinGroup-response member order."""
    subscriptions: dict[str, Subscription] = {}
    for member in members:
        decoded = cp.decode_subscription(member.metadata)
        subscriptions[member.member_id] = dataclasses.replace(decoded, group_instance_id=member.group_instance_id)
    return GroupSubscription(subscriptions)


def subscribed_topics(group: GroupSubscription) -> tuple[str, ...]:
    topics: set[str] = set()
    for subscription in group.members.values():
        topics.update(subscription.topics)
    return tuple(sorted(topics))


def encode_assignments(
    members: Iterable[str], result: Mapping[str, Assignment]
) -> dict[str, bytes]:
    """One assignment per member, at the highest consumer-protocol version, as Java's
    ``ConsumerProtocol.serializeAssignment(assignment)`` writes it."""
    return {m: cp.encode_assignment(result.get(m, Assignment(()))) for m in members}


def compute_assignment(assignor: Assignor, cluster: ClusterView, group: GroupSubscription) -> dict[str, bytes]:
    return encode_assignments(group.members, assignor.assign(cluster, group))
