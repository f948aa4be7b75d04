"""What every Kafka assignor shares (``AbstractPartitionAssignor``, spec assignors.md §2).

The leader's inputs are rebuilt the way Java builds them: the member map is a
``HashMap`` filled with ``put`` in JoinGroup order, and ``partitionsPerTopic`` a
``HashMap`` filled in the iteration order of a ``HashSet`` of all subscribed topics.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from itertools import repeat
from operator import attrgetter

from rebalance_lab.clients.assignors.java_hashmap import JavaHashMap, java_str_key, string_hash
from rebalance_lab.clients.assignors.types import (
    Assignment,
    ClusterView,
    GroupSubscription,
    PartitionMeta,
    Subscription,
    TopicPartition,
)

PartitionsPerTopic = dict[str, tuple[PartitionMeta, ...]]

_partition_id = attrgetter("partition")
_new_tuple = tuple.__new__


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause CPython's cyclic garbage collector for one large assignment.

    A big group allocates millions of small acyclic objects (``TopicPartition``s, lists);
    each batch of allocations triggers a collection that traverses every live object,
    which more than doubles the time on Kafka's 1M-partition sizes. Reference counting
    still frees everything; the collector is re-enabled (if it was on) afterwards.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def topic_partitions(topic: str, ids: Iterable[int]) -> list[TopicPartition]:
    """``[TopicPartition(topic, i) for i in ids]`` without a Python call per element."""
    return list(map(_new_tuple, repeat(TopicPartition), zip(repeat(topic), ids)))


def partition_ids(metas: Iterable[PartitionMeta]) -> Iterator[int]:
    return map(_partition_id, metas)


class AssignorError(RuntimeError):
    """An input on which Kafka's Java assignor throws; ``java_exception`` names the Java class."""

    def __init__(self, java_exception: str, message: str) -> None:
        super().__init__(f"{java_exception}: {message}")
        self.java_exception = java_exception


def member_hash_order(group: GroupSubscription) -> list[str]:
    """Member ids in the iteration order of the leader's ``subscriptions`` map.

    ``ConsumerCoordinator.onLeaderElected`` puts members into a ``new HashMap<>()`` in
    JoinGroup-response order; Python's dict order (JoinGroup order) is not Java's.
    """
    m: JavaHashMap[str, None] = JavaHashMap(string_hash)
    for member_id in group.members:
        m.put(member_id, None)
    return list(m.keys())


def partitions_per_topic(cluster: ClusterView, group: GroupSubscription, members: Sequence[str]) -> PartitionsPerTopic:
    """``AbstractPartitionAssignor.assign``: subscribed topics with non-empty metadata, each
    partition list sorted by id, in Java ``HashMap`` iteration order.

    ``members`` must be :func:`member_hash_order` (the ``HashSet`` of topics is filled in it).
    Topics without metadata are skipped silently, as in Java.
    """
    topic_set: JavaHashMap[str, None] = JavaHashMap(string_hash)
    seen: set[str] = set()  # re-putting a key changes nothing, so each topic is put once
    for member_id in members:
        for topic in group.members[member_id].topics:
            if topic not in seen:
                seen.add(topic)
                topic_set.put(topic, None)
    result: JavaHashMap[str, tuple[PartitionMeta, ...]] = JavaHashMap(string_hash)
    for topic in topic_set:
        metas = cluster.topics.get(topic)
        if metas:
            # List.sort is stable, like Python's sort.
            result.put(topic, tuple(sorted(metas, key=_partition_id)))
    return dict(result.items())


def member_info_key(member_id: str, subscription: Subscription) -> tuple[int, bytes]:
    """``MemberInfo.compareTo``: static members (with a group.instance.id) first by instance
    id, then dynamic members by member id; Java ``String`` order (spec §2.2)."""
    if subscription.group_instance_id is not None:
        return (0, java_str_key(subscription.group_instance_id))
    return (1, java_str_key(member_id))


def sorted_member_infos(member_ids: Iterable[str], members: Mapping[str, Subscription]) -> list[str]:
    """Stable sort by :func:`member_info_key` (Java's ``List.sort`` is a stable merge sort)."""
    return sorted(member_ids, key=lambda m: member_info_key(m, members[m]))


def consumer_rack(subscription: Subscription) -> str | None:
    """``subscription.rackId().filter(r -> !r.isEmpty())``."""
    return subscription.rack_id or None


def replica_racks(meta: PartitionMeta) -> frozenset[str]:
    """Racks of all replicas (offline ones included), ``null`` racks dropped."""
    return frozenset(r for r in meta.replica_racks if r is not None)


def use_rack_aware_assignment(
    consumer_racks: set[str] | frozenset[str],
    partition_racks: set[str] | frozenset[str],
    racks_per_partition: Iterable[frozenset[str]],
    prefer_rack_aware_logic: bool,
) -> bool:
    """``AbstractPartitionAssignor.useRackAwareAssignment`` (KIP-881, spec §2.3)."""
    if not consumer_racks or consumer_racks.isdisjoint(partition_racks):
        return False
    if prefer_rack_aware_logic:
        return True
    # Racks carry no information when every partition is on every rack.
    return not all(racks == partition_racks for racks in racks_per_partition)


def topic_partition_key(tp: TopicPartition) -> tuple[bytes, int]:
    """``Utils.TopicPartitionComparator``: topic (Java ``String`` order), then partition."""
    return (java_str_key(tp.topic), tp.partition)


def wrap(group: GroupSubscription, lists: Mapping[str, Sequence[TopicPartition]]) -> dict[str, Assignment]:
    """Every member in JoinGroup order with its list as an ``Assignment`` without user data.

    Java returns a ``HashMap``; the member order of this dict is not Java's and carries no
    meaning (the lists' own order does).
    """
    return {m: Assignment(tuple(lists.get(m, ()))) for m in group.members}
