"""What both client adapters share, free of any client import.

:class:`AdapterCore` plays the part of Java's ``ConsumerCoordinator`` around one assignor
instance: it builds the member's JoinGroup subscription (``metadata()``), runs the assignor
as group leader (``onLeaderElected``) and records what the member received
(``onAssignment``), so that sticky user data, owned partitions and the generation carry
over from one rebalance to the next the way Java carries them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from rebalance_lab.clients.assignors import (
    Assignment,
    ClusterView,
    CooperativeStickyAssignor,
    GroupSubscription,
    PartitionMeta,
    StickyAssignor,
    Subscription,
    TopicPartition,
    get_assignor,
)
from rebalance_lab.protocol import consumer_protocol

ADAPTED = ("range", "roundrobin", "sticky", "cooperative-sticky")


@dataclass(frozen=True)
class AdapterOptions:
    """What a Java consumer would take from its configuration.

    ``rack_id`` is Java's ``client.rack`` (sent in subscription v3). ``cooperative`` says the
    consumer runs the COOPERATIVE rebalance protocol, so owned partitions are kept across a
    JoinGroup and sent in the subscription; an EAGER consumer revokes everything first and
    sends none (Java ``ConsumerCoordinator.onJoinPrepare``).
    """

    rack_id: str | None = None
    cooperative: bool = False


class AdapterCore:
    """One member's assignor state (Java keeps one assignor instance per consumer)."""

    def __init__(self, name: str, options: AdapterOptions) -> None:
        if name not in ADAPTED:
            raise ValueError(f"no adapter for assignor {name!r}; choose one of {ADAPTED}")
        self.name = name
        self.options = options
        self.assignor = get_assignor(name)
        self.owned: tuple[TopicPartition, ...] = ()
        self.generation = -1  # the generation of the last assignment received; -1 before one
        self.last_subscription: Subscription | None = None

    # -- member side ----------------------------------------------------------------------

    def subscription(self, topics: Iterable[str], generation_known: bool = True) -> Subscription:
        """``new Subscription(topics, assignor.subscriptionUserData(...), ownedPartitions,
        generation, rackId)`` as Java's ``ConsumerCoordinator.metadata()`` builds it."""
        assignor = self.assignor
        user_data: bytes | None = None
        if isinstance(assignor, (StickyAssignor, CooperativeStickyAssignor)):
            user_data = assignor.subscription_user_data()
        owned = self.owned if self.options.cooperative else ()
        generation = self.generation if generation_known and self.generation >= 0 else None
        sub = Subscription(
            topics=tuple(topics),
            user_data=user_data,
            owned_partitions=tuple(owned),
            generation_id=generation,
            rack_id=self.options.rack_id or None,
        )
        self.last_subscription = sub
        return sub

    def subscription_bytes(self, topics: Iterable[str], generation_known: bool = True) -> bytes:
        """The JoinGroup metadata, byte-identical to Java's (``serializeSubscription``, v3)."""
        return consumer_protocol.encode_subscription(self.subscription(topics, generation_known))

    def on_assignment(self, partitions: Sequence[TopicPartition], generation: int) -> None:
        """Java ``ConsumerCoordinator.onJoinComplete`` -> ``assignor.onAssignment``."""
        self.owned = tuple(partitions)
        self.generation = generation
        assignor = self.assignor
        if isinstance(assignor, StickyAssignor):
            assignor.on_assignment(partitions, generation)
        elif isinstance(assignor, CooperativeStickyAssignor):
            assignor.on_assignment(generation)

    # -- leader side ----------------------------------------------------------------------

    def assign(self, cluster: ClusterView, members: Sequence[tuple[str, Subscription]]) -> dict[str, Assignment]:
        """``onLeaderElected``: the members in JoinGroup-response order, then the assignor.

        Every member gets an entry (Java returns one ``Assignment`` per subscription)."""
        group = GroupSubscription({member_id: sub for member_id, sub in members})
        result = self.assignor.assign(cluster, group)
        return {member_id: result.get(member_id, Assignment(())) for member_id, _ in members}


def cluster_view(
    topics: Iterable[str],
    partition_ids: Callable[[str], Iterable[int] | None],
    replica_racks: Callable[[str, int], Sequence[str | None]],
) -> ClusterView:
    """A ``ClusterView`` of the subscribed topics the leader has metadata for.

    Topics without metadata are left out; the assignors skip them as Java does."""
    view: dict[str, tuple[PartitionMeta, ...]] = {}
    for topic in topics:
        ids = partition_ids(topic)
        if not ids:
            continue
        view[topic] = tuple(PartitionMeta(p, tuple(replica_racks(topic, p))) for p in sorted(ids))
    return ClusterView(view)


def grouped(partitions: Iterable[TopicPartition]) -> list[tuple[str, list[int]]]:
    """Partitions grouped by topic in first-appearance order, list order inside a topic:
    the layout of Java's ``serializeAssignment``."""
    groups: dict[str, list[int]] = {}
    for tp in partitions:
        groups.setdefault(tp.topic, []).append(tp.partition)
    return list(groups.items())


def union_topics(subscriptions: Mapping[str, Subscription] | Iterable[Subscription]) -> list[str]:
    subs = subscriptions.values() if isinstance(subscriptions, Mapping) else subscriptions
    seen: dict[str, None] = {}
    for sub in subs:
        for topic in sub.topics:
            seen.setdefault(topic, None)
    return list(seen)
