"""Builders mirroring Kafka's assignor test utilities (spec assignors.md §6.2)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from rebalance_lab.clients.assignors import (
    Assignment,
    Assignor,
    ClusterView,
    GroupSubscription,
    PartitionMeta,
    Subscription,
    TopicPartition,
)
from rebalance_lab.protocol.consumer_protocol import encode_sticky_user_data

ALL_RACKS = ("a", "b", "c", "d", "e", "f")


def tp(name: str) -> TopicPartition:
    """``"t1-2"`` -> TopicPartition("t1", 2) (the last dash separates the partition)."""
    topic, _, partition = name.rpartition("-")
    return TopicPartition(topic, int(partition))


def tps(names: str) -> tuple[TopicPartition, ...]:
    """``"t-0 t-1"`` or ``"t-0,t-1"`` -> partitions in that order."""
    return tuple(tp(n) for n in names.replace(",", " ").split())


def show(partitions: Iterable[TopicPartition]) -> str:
    return " ".join(f"{p.topic}-{p.partition}" for p in partitions)


def sub(
    topics: str | Sequence[str],
    owned: str | Sequence[TopicPartition] = (),
    gen: int | None = None,
    rack: str | None = None,
    instance: str | None = None,
    user_data: bytes | None = None,
) -> Subscription:
    topic_list = tuple(topics.replace(",", " ").split()) if isinstance(topics, str) else tuple(topics)
    owned_list = tps(owned) if isinstance(owned, str) else tuple(owned)
    return Subscription(
        topics=topic_list,
        user_data=user_data,
        owned_partitions=owned_list,
        generation_id=gen,
        rack_id=rack,
        group_instance_id=instance,
    )


def eager_sub(topics: str | Sequence[str], owned: str = "", gen: int | None = None, **kw: object) -> Subscription:
    """An eager ``sticky`` member: previous ownership travels in the V1 user data."""
    data = encode_sticky_user_data(tps(owned), gen) if owned or gen is not None else None
    return sub(topics, user_data=data, **kw)  # type: ignore[arg-type]


def group(*members: tuple[str, Subscription]) -> GroupSubscription:
    """Members in JoinGroup order (the leader puts them into a Java HashMap in this order)."""
    return GroupSubscription(dict(members))


def counts(**topic_counts: int) -> ClusterView:
    return ClusterView.of_counts(topic_counts)


def cluster(topic_counts: Mapping[str, int]) -> ClusterView:
    return ClusterView.of_counts(topic_counts)


def rack_cluster(
    topic_counts: Mapping[str, int],
    rf: int,
    num_broker_racks: int,
    next_node_step: str = "count",
) -> ClusterView:
    """``AbstractPartitionAssignorTest.partitionInfos``: numBrokerRacks*rf brokers (rf brokers
    without racks), broker i on ALL_RACKS[i % numBrokerRacks]; partition i's replicas are
    brokers (i + j + nextNodeIndex) mod numBrokers. ``next_node_step`` "count" advances the
    node index by each topic's partition count, "one" by 1 (sticky tests), "zero" never
    (range tests start every topic at node 0)."""
    num_brokers = num_broker_racks * rf if num_broker_racks > 0 else rf
    racks = [ALL_RACKS[i % num_broker_racks] if num_broker_racks > 0 else None for i in range(num_brokers)]
    topics: dict[str, tuple[PartitionMeta, ...]] = {}
    next_node = 0
    for topic, n in topic_counts.items():
        topics[topic] = tuple(
            PartitionMeta(i, tuple(racks[(i + j + next_node) % num_brokers] for j in range(rf))) for i in range(n)
        )
        next_node += {"count": n, "one": 1, "zero": 0}[next_node_step]
    return ClusterView(topics)


def lists(result: Mapping[str, Assignment]) -> dict[str, str]:
    return {m: show(a.partitions) for m, a in result.items()}


def run(assignor: Assignor, cluster_view: ClusterView, grp: GroupSubscription) -> dict[str, str]:
    result = assignor.assign(cluster_view, grp)
    assert list(result) == list(grp.members), "every member must be present, in JoinGroup order"
    return lists(result)


def owned_after(result: Mapping[str, Assignment]) -> dict[str, tuple[TopicPartition, ...]]:
    return {m: a.partitions for m, a in result.items()}


def racks(n: int) -> list[str | None]:
    """``AbstractPartitionAssignorTest.racks(n)``: n brokers on racks a, b, c, ..."""
    return [ALL_RACKS[i % len(ALL_RACKS)] for i in range(n)]


def null_racks(n: int) -> list[str | None]:
    return [None] * n


def broker_cluster(topic_counts: Mapping[str, int], rf: int, broker_racks: Sequence[str | None]) -> ClusterView:
    """``AbstractPartitionAssignorTest.partitionsPerTopic``: explicit brokers; the node index
    advances by each topic's partition count in the test's (insertion) order."""
    n = len(broker_racks)
    topics: dict[str, tuple[PartitionMeta, ...]] = {}
    next_node = 0
    for topic, count in topic_counts.items():
        topics[topic] = tuple(
            PartitionMeta(i, tuple(broker_racks[(i + j + next_node) % n] for j in range(rf))) for i in range(count)
        )
        next_node += count
    return ClusterView(topics)


def rack_group(
    consumer_topics: Sequence[Sequence[str]],
    consumer_racks: Sequence[str | None],
    owned: Sequence[str] = (),
) -> GroupSubscription:
    """``consumer0..`` with the given topics, racks and (cooperative) owned partitions, generation -1."""
    members = []
    for i, topics in enumerate(consumer_topics):
        own = tps(owned[i]) if i < len(owned) else ()
        members.append((f"consumer{i}", sub(list(topics), own, rack=consumer_racks[i])))
    return group(*members)


def verify_rack_assignment(
    assignor: Assignor,
    topic_counts: Mapping[str, int],
    rf: int,
    broker_racks: Sequence[str | None],
    consumer_racks: Sequence[str | None],
    consumer_topics: Sequence[Sequence[str]],
    expected: Sequence[str],
    mismatches: int,
    owned: Sequence[str] = (),
) -> None:
    """``AbstractPartitionAssignorTest.verifyRackAssignment``: lists compared as sets, then the
    number of partitions given to a consumer on a rack without a replica (unless -1)."""
    view = broker_cluster(topic_counts, rf, broker_racks)
    result = assignor.assign(view, rack_group(consumer_topics, consumer_racks, owned))
    actual = {m: sorted(show(a.partitions).split()) for m, a in result.items()}
    assert actual == {f"consumer{i}": sorted(show(tps(e)).split()) for i, e in enumerate(expected)}
    if mismatches < 0:
        return
    metas = {t: {p.partition: p for p in ps} for t, ps in view.topics.items()}
    bad = [
        p
        for i, rack in enumerate(consumer_racks)
        if rack is not None
        for p in result[f"consumer{i}"].partitions
        if rack not in metas[p.topic][p.partition].replica_racks
    ]
    assert len(bad) == mismatches, bad
