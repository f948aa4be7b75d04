"""``RoundRobinAssignor`` (name ``roundrobin``, spec §4). Not rack-aware."""

from __future__ import annotations

from itertools import chain
from typing import ClassVar

from rebalance_lab.clients.assignors.common import (
    AssignorError,
    member_hash_order,
    partitions_per_topic,
    sorted_member_infos,
    topic_partitions,
    wrap,
)
from rebalance_lab.clients.assignors.java_hashmap import java_str_key
from rebalance_lab.clients.assignors.types import Assignment, ClusterView, GroupSubscription, TopicPartition


class RoundRobinAssignor:
    """Kafka's ``org.apache.kafka.clients.consumer.RoundRobinAssignor``.

    ``prefer_rack_aware_logic`` is accepted for a uniform constructor across assignors;
    like Java's inherited field it has no effect here (round robin is not rack-aware).
    """

    name: ClassVar[str] = "roundrobin"  # ClassVar: a class attribute when compiled (mypyc) too

    def __init__(self, prefer_rack_aware_logic: bool = False) -> None:
        self.prefer_rack_aware_logic = prefer_rack_aware_logic

    def assign(self, cluster: ClusterView, group: GroupSubscription) -> dict[str, Assignment]:
        return wrap(group, self.assign_lists(cluster, group))

    def assign_lists(self, cluster: ClusterView, group: GroupSubscription) -> dict[str, list[TopicPartition]]:
        """:meth:`assign` as each member's partition list, without the ``Assignment`` wrappers."""
        members = member_hash_order(group)
        counts = {t: len(metas) for t, metas in partitions_per_topic(cluster, group, members).items()}
        # MemberInfo list is built in subscriptions-HashMap order, then stably sorted.
        ring = sorted_member_infos(members, group.members)
        if not ring:
            # CircularIterator's constructor refuses an empty collection.
            raise AssignorError("IllegalArgumentException", "CircularIterator can only be used on non-empty lists")
        lists: dict[str, list[TopicPartition]] = {m: [] for m in members}
        topic_sets = {m: set(group.members[m].topics) for m in ring}
        partitions = _all_partitions_sorted(counts, group)
        if all(s.issuperset(counts) for s in topic_sets.values()):
            # Everyone takes every topic: the loop below never skips anyone, so the member at ring
            # position j gets partitions j, j + n, j + 2n, ... (strided slices, not a step per partition).
            n = len(ring)
            for j, member in enumerate(ring):
                lists[member].extend(partitions[j::n])
            return lists
        cursor = 0
        for tp in partitions:
            # Skip members not subscribed to the topic; the cursor carries across topics.
            while tp.topic not in topic_sets[ring[cursor]]:
                cursor = (cursor + 1) % len(ring)
            lists[ring[cursor]].append(tp)
            cursor = (cursor + 1) % len(ring)
        return lists


def _all_partitions_sorted(counts: dict[str, int], group: GroupSubscription) -> list[TopicPartition]:
    """Union of subscribed topics in ``TreeSet`` (Java ``String``) order; partitions 0..count-1
    built from the count, not from metadata ids."""
    topics = sorted({t for s in group.members.values() for t in s.topics}, key=java_str_key)
    return list(chain.from_iterable(topic_partitions(t, range(counts[t])) for t in topics if t in counts))
