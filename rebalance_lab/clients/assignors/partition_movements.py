"""Stickiness bookkeeping of the general sticky builder
(``AbstractStickyAssignor.PartitionMovements``, spec §5.5 "Move P to D")."""

from __future__ import annotations

from rebalance_lab.clients.assignors.java_hashmap import JavaHashMap, topic_partition_hash
from rebalance_lab.clients.assignors.types import TopicPartition

Pair = tuple[str, str]  # (source member, destination member)


class PartitionMovements:
    """Where each moved partition came from, per partition and per topic and pair.

    The per-pair sets are Java ``HashSet<TopicPartition>``s: which partition is swapped
    back is the *first* element in Java ``HashSet`` order, so they are emulated.
    """

    def __init__(self) -> None:
        self._by_partition: dict[TopicPartition, Pair] = {}
        self._by_topic: dict[str, dict[Pair, JavaHashMap[TopicPartition, None]]] = {}

    def _remove_record(self, tp: TopicPartition) -> Pair:
        pair = self._by_partition.pop(tp)
        pairs = self._by_topic[tp.topic]
        pairs[pair].remove(tp)
        if not len(pairs[pair]):
            del pairs[pair]  # an emptied set is discarded; a later one starts fresh
        if not pairs:
            del self._by_topic[tp.topic]
        return pair

    def _add_record(self, tp: TopicPartition, pair: Pair) -> None:
        self._by_partition[tp] = pair
        pairs = self._by_topic.setdefault(tp.topic, {})
        if pair not in pairs:
            pairs[pair] = JavaHashMap(topic_partition_hash)
        pairs[pair].put(tp, None)

    def move(self, tp: TopicPartition, old: str, new: str) -> None:
        """Record a move; a partition going back to its original source erases its record."""
        if tp in self._by_partition:
            src, _ = self._remove_record(tp)
            if src != new:
                self._add_record(tp, (src, new))
        else:
            self._add_record(tp, (old, new))

    def actual_partition_to_move(self, tp: TopicPartition, old: str, new: str) -> TopicPartition:
        """If partitions of this topic already moved ``new -> (tp's source)``, move one of
        those back instead of ``tp`` (keeps per-topic movements acyclic)."""
        pairs = self._by_topic.get(tp.topic)
        if pairs is None:
            return tp
        if tp in self._by_partition:
            old = self._by_partition[tp][0]
        reverse = pairs.get((new, old))
        if reverse is None:
            return tp
        return reverse.first_key()

    def is_sticky(self) -> bool:
        """Java's ``isSticky``: false iff, for some topic, partitions moved both a->b and b->a
        (its cycle search only ever reports such 2-cycles)."""
        return not any((dst, src) in pairs for pairs in self._by_topic.values() for src, dst in pairs)
