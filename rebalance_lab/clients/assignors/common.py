"""What every Kafka assignor shares (``AbstractPartitionAssignor``, spec assignors.md §2).

The leader's inputs are rebuilt the way Java builds them: the member map is a
``HashMap`` filled with ``put`` in JoinGroup order, and ``partitionsPerTopic`` a
``HashMap`` filled in the iteration order of a ``HashSet`` of all subscribed topics.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from itertools import islice, repeat
from operator import attrgetter, le
from typing import ClassVar

from rebalance_lab.clients.assignors.errors import AssignorError as AssignorError  # its home; named here as before
from rebalance_lab.clients.assignors.java_hashmap import java_str_key, string_hash_order
from rebalance_lab.clients.assignors.types import (
    Assignment,
    ClusterView,
    GroupSubscription,
    PartitionMeta,
    Subscription,
    TopicPartition,
)

PartitionsPerTopic = dict[str, tuple[PartitionMeta, ...]]
# Topic -> partition ids in the order of its PartitionsPerTopic entry (ascending).
PartitionIds = dict[str, Sequence[int]]

_partition_id = attrgetter("partition")
_new_tuple = tuple.__new__


#: Partitions from which an assignment's result is handed straight to the collector's oldest generation.
PROMOTE_PARTITIONS = 100_000


def gc_paused() -> AbstractContextManager[Callable[[int], None]]:
    """Pause CPython's cyclic garbage collector for one large assignment.

    A big group allocates millions of small acyclic objects (``TopicPartition``s, lists);
    each batch of allocations triggers a collection that traverses every live object,
    which more than doubles the time on Kafka's 1M-partition sizes. Reference counting
    still frees everything; the collector is re-enabled (if it was on) afterwards.

    The context yields ``sized(partitions)``: an assignment of at least
    :data:`PROMOTE_PARTITIONS` partitions has its result, a long-lived object graph of
    that many ``TopicPartition``s, moved straight into the oldest generation on the way
    out (``gc.freeze()`` then ``gc.unfreeze()``: every tracked object goes there and the
    young count restarts), instead of the young collection that re-enabling would
    trigger at once traversing all of it (about 60 ms per million on this machine).
    Nothing is kept from the collector: the oldest generation is still collected, as
    CPython schedules it. When the permanent generation is not empty (someone else froze
    objects), the result is not promoted: unfreezing would thaw theirs too.
    """
    return _GcPause()


class _GcPause:
    """:func:`gc_paused` as a plain class: assignors of small groups run by the thousand, and a
    generator-based context manager costs a few microseconds per run."""

    __slots__ = ("promote", "was_enabled")

    def __init__(self) -> None:
        self.was_enabled = False
        self.promote = False

    def __enter__(self) -> Callable[[int], None]:
        self.was_enabled = gc.isenabled()
        gc.disable()
        return self.sized

    def sized(self, partitions: int) -> None:
        self.promote = partitions >= PROMOTE_PARTITIONS

    def __exit__(self, *exc: object) -> None:
        # Not when something froze objects already (the emulator's server does, in the same process when a
        # test runs clients beside it): unfreeze() would hand all of those back to the collector as well.
        if self.promote and gc.get_freeze_count() == 0:
            gc.freeze()
            gc.unfreeze()
        if self.was_enabled:
            gc.enable()


def topic_partitions(topic: str, ids: Iterable[int]) -> list[TopicPartition]:
    """``[TopicPartition(topic, i) for i in ids]`` without a Python call per element."""
    return list(map(_new_tuple, repeat(TopicPartition), zip(repeat(topic), ids)))


def zip_partitions(topics: Iterable[str], ids: Iterable[int]) -> list[TopicPartition]:
    """``[TopicPartition(t, i) for t, i in zip(topics, ids)]`` without a Python call per element."""
    return list(map(_new_tuple, repeat(TopicPartition), zip(topics, ids, strict=True)))


#: Groups up to this many partitions share their ``TopicPartition`` objects between assignments.
SHARED_PARTITIONS = 4096
_SHARED_REMEMBERED = 200_000  # partitions held by the cache below before it starts again
_shared: dict[tuple[str, tuple[int, ...]], tuple[TopicPartition, ...]] = {}
_shared_held = [0]


def shared_partitions(topics: Iterable[str], ids: Mapping[str, Iterable[int]]) -> list[TopicPartition] | None:
    """``topic_partitions`` of each topic in turn, made once and then shared: the replay's what-if
    runs an assignor per generation of thousands of small groups, and building the same few dozen
    ``TopicPartition``s each time is a large part of a run. ``None`` when the topics hold more
    than :data:`SHARED_PARTITIONS` partitions (a big assignment builds its own, laid out per
    member; see ``ConstrainedBuilder._deal_fresh``). The objects are immutable tuples, so
    sharing them changes nothing a caller can see but their identity."""
    out: list[TopicPartition] = []
    for topic in topics:
        key = (topic, tuple(ids[topic]))
        found = _shared.get(key)
        if found is None:
            if len(key[1]) + len(out) > SHARED_PARTITIONS:
                return None
            if _shared_held[0] >= _SHARED_REMEMBERED:
                _shared.clear()
                _shared_held[0] = 0
            found = _shared[key] = tuple(topic_partitions(topic, key[1]))
            _shared_held[0] += len(found)
        out += found
        if len(out) > SHARED_PARTITIONS:
            return None
    return out


def member_hash_order(group: GroupSubscription) -> list[str]:
    """Member ids in the iteration order of the leader's ``subscriptions`` map.

    ``ConsumerCoordinator.onLeaderElected`` puts members into a ``new HashMap<>()`` in
    JoinGroup-response order; Python's dict order (JoinGroup order) is not Java's.
    """
    return string_hash_order(group.members)


@dataclass(frozen=True)
class TopicMetadata:
    """``partitionsPerTopic`` and, read from it once, each topic's partition ids."""

    partitions: PartitionsPerTopic
    ids: PartitionIds


def partitions_per_topic(cluster: ClusterView, group: GroupSubscription, members: Sequence[str]) -> PartitionsPerTopic:
    """``AbstractPartitionAssignor.assign``: subscribed topics with non-empty metadata, each
    partition list sorted by id, in Java ``HashMap`` iteration order.

    ``members`` must be :func:`member_hash_order` (the ``HashSet`` of topics is filled in it).
    Topics without metadata are skipped silently, as in Java.
    """
    return topic_metadata(cluster, group, members).partitions


def topic_metadata(cluster: ClusterView, group: GroupSubscription, members: Sequence[str]) -> TopicMetadata:
    """:func:`partitions_per_topic` together with the sorted partition ids of every topic."""
    topic_set: dict[str, None] = {}  # the HashSet's puts, in order; a repeated put changes nothing
    seen: set[str] = set()
    for member_id in members:
        topics = group.members[member_id].topics
        if not seen.issuperset(topics):  # usually a superset: no Python loop then
            topic_set.update(dict.fromkeys(topics))
            seen.update(topics)
    # The result depends only on the view and the HashSet's puts: a view reused for many assignments
    # (the replay's what-if) keeps one per put sequence. Callers only read it (as they read the ids).
    known = cluster.derived.get(_TOPIC_METADATA)
    if not isinstance(known, dict):
        known = cluster.derived[_TOPIC_METADATA] = {}
    puts = tuple(topic_set)
    found = known.get(puts)
    if found is None:
        if len(known) >= _TOPIC_METADATA_CACHED:
            known.clear()
        found = known[puts] = _topic_metadata(cluster, topic_set)
    result: TopicMetadata = found
    return result


_TOPIC_METADATA = "topic_metadata"
_TOPIC_METADATA_CACHED = 64  # per view


def _topic_metadata(cluster: ClusterView, topic_set: dict[str, None]) -> TopicMetadata:
    present = {t: metas for t in string_hash_order(topic_set) if (metas := cluster.topics.get(t))}
    sorted_by_id = _SortedById.of(cluster)
    # partitionsPerTopic: a HashMap filled in the HashSet's order.
    ordered = {t: sorted_by_id.get(t, present[t]) for t in string_hash_order(present)}
    return TopicMetadata({t: metas for t, (metas, _) in ordered.items()}, {t: ids for t, (_, ids) in ordered.items()})


class _SortedById:
    """Each topic's metadata sorted by partition id, and the ids, derived once per ClusterView.

    Reading a million partitions' ids is a large share of a big assignment, so they are read
    once, and sorted only if out of order. The usual ids 0..n-1 come back as a slice of one
    list shared by all topics: the ``TopicPartition``s made from them then point at a few
    ``int`` objects close together instead of one per partition spread over the metadata,
    which makes the cyclic GC's pass over a big result several times faster.
    """

    KEY: ClassVar[str] = "sorted_by_id"  # ClassVar: a class attribute when compiled (mypyc) too

    def __init__(self) -> None:
        self.usual: list[int] = []
        self.topics: dict[str, tuple[tuple[PartitionMeta, ...], Sequence[int]]] = {}

    @classmethod
    def of(cls, cluster: ClusterView) -> _SortedById:
        found = cluster.derived.get(cls.KEY)
        if not isinstance(found, cls):
            found = cluster.derived[cls.KEY] = cls()
        return found

    def get(self, topic: str, metas: Sequence[PartitionMeta]) -> tuple[tuple[PartitionMeta, ...], Sequence[int]]:
        found = self.topics.get(topic)
        if found is None:
            found = self.topics[topic] = self._sort(metas)
        return found

    def _sort(self, metas: Sequence[PartitionMeta]) -> tuple[tuple[PartitionMeta, ...], Sequence[int]]:
        ids = [meta.partition for meta in metas]  # faster than map(attrgetter) on slots
        n = len(ids)
        if n > len(self.usual):
            self.usual.extend(range(len(self.usual), n))
        if ids == self.usual[:n]:
            return tuple(metas), self.usual[:n]
        if all(map(le, ids, islice(ids, 1, None))):
            return tuple(metas), ids
        ordered = tuple(sorted(metas, key=_partition_id))  # List.sort is stable, like Python's sort.
        return ordered, list(map(_partition_id, ordered))


def partition_ids_of(ppt: PartitionsPerTopic) -> PartitionIds:
    """The ids of an already sorted ``partitionsPerTopic``."""
    return {t: list(map(_partition_id, metas)) for t, metas in ppt.items()}


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
