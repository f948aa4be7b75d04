"""Sticky general builder for differing subscriptions
(``AbstractStickyAssignor.GeneralAssignmentBuilder``, KAFKA-12675/KAFKA-15106, spec §5.5).

Java re-scans everything on each ``isBalanced()`` call; here the predicate is cached per
state version and computed from per-topic owner counts, which gives the same boolean
(it is a pure predicate) in near-linear instead of quadratic time.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter

from rebalance_lab.clients.assignors.common import AssignorError, PartitionIds, PartitionsPerTopic, topic_partitions
from rebalance_lab.clients.assignors.java_hashmap import java_str_key
from rebalance_lab.clients.assignors.partition_movements import PartitionMovements
from rebalance_lab.clients.assignors.sticky_racks import RackInfo
from rebalance_lab.clients.assignors.types import Subscription, TopicPartition

Lists = dict[str, list[TopicPartition]]
_topic_of = itemgetter(0)


def _npe(what: str) -> AssignorError:
    return AssignorError("NullPointerException", what)


@dataclass(frozen=True)
class PrevOwner:
    """``ConsumerGenerationPair``: the lower-generation owner a partition may move back to."""

    consumer: str
    generation: int


class SortedConsumers:
    """Java's ``TreeSet`` ordered by (assignment size, member id).

    Entries carry the size they were inserted with; like Java, callers remove a consumer
    before its size changes and re-add it afterwards.
    """

    def __init__(self) -> None:
        self._entries: list[tuple[int, bytes, str]] = []
        self._size_at_insert: dict[str, int] = {}

    def add(self, consumer: str, size: int) -> None:
        if consumer in self._size_at_insert:
            return
        self._size_at_insert[consumer] = size
        insort(self._entries, (size, java_str_key(consumer), consumer))

    def remove(self, consumer: str) -> None:
        size = self._size_at_insert.pop(consumer, None)
        if size is None:
            return
        entry = (size, java_str_key(consumer), consumer)
        del self._entries[bisect_left(self._entries, entry)]

    def entries(self) -> list[tuple[int, bytes, str]]:
        """The live (size, key, consumer) list: read it, change it only through this class."""
        return self._entries

    def resize_at(self, index: int, size: int) -> None:
        """``remove`` then ``add`` with a new size, for the entry at ``index``."""
        _, key, consumer = self._entries.pop(index)
        self._size_at_insert[consumer] = size
        insort(self._entries, (size, key, consumer))

    def __iter__(self) -> Iterator[str]:
        # No copy: every caller stops iterating as soon as it changes the set.
        return (c for _, _, c in self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def first(self) -> str:
        return self._entries[0][2]

    def last(self) -> str:
        return self._entries[-1][2]


class GeneralBuilder:
    """One run of the general builder. ``movements`` is kept for ``isSticky()``."""

    def __init__(
        self,
        ppt: PartitionsPerTopic,
        ids: PartitionIds,
        racks: RackInfo,
        owned: Mapping[str, list[TopicPartition]],
        subscriptions: Mapping[str, Subscription],
        members: Sequence[str],
        prev_assignment: dict[TopicPartition, PrevOwner],
    ) -> None:
        self.ppt = ppt
        self.racks = racks
        self.subs = subscriptions
        self.prev = prev_assignment
        self.total = sum(len(m) for m in ppt.values())
        self.potential: dict[str, list[str]] = {t: [] for t in ppt}  # topic2AllPotentialConsumers
        self.topics_of: dict[str, list[str]] = {}  # consumer2AllPotentialTopics
        for m in members:
            self.topics_of[m] = [t for t in subscriptions[m].topics if t in ppt]
            for t in self.topics_of[m]:
                self.potential[t].append(m)
        self.topic_sets = {m: set(ts) for m, ts in self.topics_of.items()}
        self.current: Lists = {m: list(owned.get(m, [])) for m in members}
        self.owner: dict[TopicPartition, str] = {tp: m for m, tps in self.current.items() for tp in tps}
        sorted_topics = sorted(ppt, key=lambda t: (len(self.potential[t]), java_str_key(t)))
        self.sorted_all: list[TopicPartition] = []
        for t in sorted_topics:
            self.sorted_all.extend(topic_partitions(t, ids[t]))
        self.sorted = SortedConsumers()
        self.movements = PartitionMovements()
        self.revocation_required = False
        self.version = 0
        self.member_order = list(owned)  # consumerToOwnedPartitions (HashMap) iteration order
        self.irregular = _is_irregular(ppt, ids, owned)
        self._balanced_at: tuple[int, bool] = (-1, False)
        self._max_size: dict[str, int] = {}
        self._min_cache: dict[str, int] = {}
        self._min_version = -1
        self._topic_owners: dict[str, dict[str, int]] = {}  # topic -> owner -> count; built by build()

    # -------------------------------------------------------------- state helpers

    def _rebuild_topic_owners(self) -> None:
        self._topic_owners = {}
        for m, tps in self.current.items():
            for topic, count in Counter(map(_topic_of, tps)).items():
                owners = self._topic_owners.get(topic)
                if owners is None:
                    owners = self._topic_owners[topic] = {}
                owners[m] = count

    def _size(self, consumer: str | None) -> int:
        if consumer is None or consumer not in self.current:
            raise _npe(f"no current assignment for consumer {consumer!r}")
        return len(self.current[consumer])

    def _count_owner(self, topic: str, consumer: str) -> None:
        owners = self._topic_owners.get(topic)
        if owners is None:
            owners = self._topic_owners[topic] = {}
        owners[consumer] = owners.get(consumer, 0) + 1

    def _append(self, consumer: str, tp: TopicPartition) -> None:
        self.current[consumer].append(tp)
        self._count_owner(tp.topic, consumer)
        self.owner[tp] = consumer
        self.version += 1

    def _discard(self, consumer: str, tp: TopicPartition) -> None:
        self.current[consumer].remove(tp)
        owners = self._topic_owners[tp.topic]
        owners[consumer] -= 1
        if not owners[consumer]:
            del owners[consumer]
        self.version += 1

    def max_assignment_size(self, consumer: str) -> int:
        """All partitions of its topics (duplicates count twice, as in Java); the total
        when it lists as many topics as exist."""
        if consumer not in self._max_size:
            topics = self.topics_of[consumer]
            size = self.total if len(topics) == len(self.ppt) else sum(len(self.ppt[t]) for t in topics)
            self._max_size[consumer] = size
        return self._max_size[consumer]

    # -------------------------------------------------------------- build

    def build(self) -> Lists:
        assigned = self._validate_owned()
        unassigned = self._unassigned(assigned)
        for m in self.current:
            self.sorted.add(m, len(self.current[m]))
        self._balance(unassigned)
        return self.current

    def _validate_owned(self) -> list[TopicPartition]:
        """Drop owned partitions of vanished topics, unsubscribed topics or mismatched racks."""
        assigned: list[TopicPartition] = []
        for consumer, partitions in self.current.items():
            if not self.racks.enabled and self.topic_sets[consumer].issuperset(map(_topic_of, partitions)):
                assigned.extend(partitions)  # all still subscribed (so all exist): all kept
                continue
            topics = self.subs[consumer].topics
            kept: list[TopicPartition] = []
            for tp in partitions:
                if tp.topic not in self.potential:
                    self.owner.pop(tp, None)
                elif tp.topic not in topics or self.racks.racks_mismatch(consumer, tp):
                    # Java leaves currentPartitionConsumer stale here; maybeAssign overwrites it.
                    self.revocation_required = True
                else:
                    kept.append(tp)
                    assigned.append(tp)
            partitions[:] = kept
        self._rebuild_topic_owners()
        return assigned

    def _unassigned(self, assigned: list[TopicPartition]) -> list[TopicPartition]:
        """``sortedAllPartitions`` minus ``assigned`` by Java's merge walk (PartitionComparator:
        potential-consumer count, topic, partition)."""
        if not assigned:
            return self.sorted_all
        if not self.irregular:
            # Partition ids are 0..count-1 and all owned ones in range: every assigned one is in
            # sortedAllPartitions once, so if they are distinct the walk is a plain difference.
            taken = set(assigned)
            if len(taken) == len(assigned):
                return [tp for tp in self.sorted_all if tp not in taken]
        assigned.sort(key=lambda tp: (len(self.potential[tp.topic]), java_str_key(tp.topic), tp.partition))
        out: list[TopicPartition] = []
        pos, add_directly = 0, False
        for tp in self.sorted_all:
            if add_directly or assigned[pos] != tp:
                out.append(tp)
            elif pos + 1 < len(assigned):
                pos += 1
            else:
                add_directly = True
        return out

    def _balance(self, unassigned: list[TopicPartition]) -> None:
        initializing = not self.current[self.sorted.last()] if len(self.sorted) else True
        to_assign = unassigned
        if self.racks.enabled:
            # First with rack matching (assigned ones leave the copy), then without.
            to_assign = list(unassigned)
            self._maybe_assign(to_assign, rack_aware=True)
        self._maybe_assign(to_assign, rack_aware=False)

        fixed_topics = {t for t, cs in self.potential.items() if len(cs) < 2}
        fixed_partitions = {TopicPartition(t, i) for t in fixed_topics for i in range(len(self.ppt[t]))}
        self.sorted_all = [tp for tp in self.sorted_all if tp not in fixed_partitions]
        unassigned = [tp for tp in unassigned if tp not in fixed_partitions]
        fixed = self._take_out_fixed_consumers()

        pre_current = {m: list(tps) for m, tps in self.current.items()}
        pre_owner = dict(self.owner)
        if not self.revocation_required:
            self._perform_reassignments(unassigned)
        performed = self._perform_reassignments(self.sorted_all)
        # Keep the reassignment only if it strictly improves the balance score.
        if not initializing and performed and _balance_score(self.current) >= _balance_score(pre_current):
            self.current = pre_current
            self.owner = pre_owner
            self._rebuild_topic_owners()
            self.version += 1
        for consumer, partitions in fixed.items():
            self.current[consumer] = partitions

    def _maybe_assign(self, partitions: list[TopicPartition], rack_aware: bool) -> None:
        """Give each partition to the first consumer in (size, id) order subscribing to it
        (and, in the rack pass, on one of its racks). The rack pass removes what it placed."""
        remaining: list[TopicPartition] = []
        potential, topic_sets, current = self.potential, self.topic_sets, self.current
        entries, resize_at = self.sorted.entries(), self.sorted.resize_at
        mismatch = self.racks.racks_mismatch
        for tp in partitions:
            placed = False
            topic = tp[0]
            if potential[topic]:
                for index, (_, _, consumer) in enumerate(entries):
                    if topic in topic_sets[consumer] and not (rack_aware and mismatch(consumer, tp)):
                        self._append(consumer, tp)
                        resize_at(index, len(current[consumer]))
                        placed = True
                        break
            if rack_aware and not placed:
                remaining.append(tp)
        if rack_aware:
            partitions[:] = remaining

    def _can_participate(self, consumer: str) -> bool:
        """A consumer short of its maximum, or holding a partition of a shared topic."""
        if len(self.current[consumer]) < self.max_assignment_size(consumer):
            return True
        return any(len(self.potential[tp.topic]) >= 2 for tp in self.current[consumer])

    def _take_out_fixed_consumers(self) -> Lists:
        fixed: Lists = {}
        for consumer in self.topics_of:
            if not self._can_participate(consumer):
                self.sorted.remove(consumer)
                fixed[consumer] = self.current.pop(consumer)
        return fixed

    # -------------------------------------------------------------- reassignment

    def _perform_reassignments(self, partitions: list[TopicPartition]) -> bool:
        performed = False
        modified = True
        while modified:
            modified = False
            for tp in partitions:
                if self._is_balanced():
                    break
                if self._reassign_one(tp):
                    performed = modified = True
        return performed

    def _reassign_one(self, tp: TopicPartition) -> bool:
        """One iteration of ``performReassignments``' inner loop; True if something moved."""
        consumer = self.owner.get(tp)
        prev = self.prev.get(tp)
        if prev is not None and self._size(consumer) > self._size(prev.consumer) + 1:
            # Move back towards the previous generation's owner (Q5: NPE if it is fixed).
            self._reassign(tp, prev.consumer)
            return True
        size = self._size(consumer)
        if self._rack_peer_is_smaller(tp, consumer, size) or self._smaller_potential_consumer(tp.topic, size):
            self._reassign(tp, self._first_subscriber(tp.topic))
            return True
        return False

    def _rack_peer_is_smaller(self, tp: TopicPartition, consumer: str | None, size: int) -> bool:
        """Rack branch: the owner is on one of the partition's racks and a potential consumer
        also on one of them has at least two fewer partitions."""
        rack = self.racks.consumer_racks.get(consumer) if consumer is not None else None
        if rack is None:
            return False
        racks = self.racks.partition_racks.get(tp)
        if racks is None:
            raise _npe(f"no rack information for {tp}")
        if rack not in racks:
            return False
        for other in self.potential[tp.topic]:
            other_rack = self.racks.consumer_racks.get(other)
            if other_rack is not None and other_rack in racks and size > self._size(other) + 1:
                return True
        return False

    def _smaller_potential_consumer(self, topic: str, size: int) -> bool:
        """Some potential consumer of the topic holds fewer than ``size - 1`` partitions."""
        if self.irregular:
            # Literal Java loop: stops at the first smaller one (a missing one first is an NPE).
            return any(size > self._size(other) + 1 for other in self.potential[topic])
        return self._min_potential_size(topic) < size - 1

    def _min_potential_size(self, topic: str) -> int:
        """Smallest size among the topic's potential consumers, cached per state version
        (Java loops over them for every partition; only existence of a smaller one matters)."""
        if self._min_version != self.version:
            self._min_cache, self._min_version = {}, self.version
        if topic not in self._min_cache:
            self._min_cache[topic] = min(self._size(c) for c in self.potential[topic])
        return self._min_cache[topic]

    def _first_subscriber(self, topic: str) -> str:
        """The move target: the first consumer in (size, id) order subscribing to the topic --
        not necessarily the consumer that proved the imbalance."""
        for consumer in self.sorted:
            if topic in self.topic_sets[consumer]:
                return consumer
        raise AssertionError(f"no subscriber for {topic}")

    def _reassign(self, tp: TopicPartition, new: str) -> None:
        old = self.owner[tp]
        actual = self.movements.actual_partition_to_move(tp, old, new)
        self._process_movement(actual, new)

    def _process_movement(self, tp: TopicPartition, new: str) -> None:
        old = self.owner[tp]
        self.sorted.remove(old)
        self.sorted.remove(new)
        self.movements.move(tp, old, new)
        self._discard(old, tp)
        self._append(new, tp)
        self.sorted.add(new, len(self.current[new]))
        self.sorted.add(old, len(self.current[old]))

    # -------------------------------------------------------------- isBalanced

    def _is_balanced(self) -> bool:
        version, value = self._balanced_at
        if version != self.version:
            value = self._compute_is_balanced()
            self._balanced_at = (self.version, value)
        return value

    def _compute_is_balanced(self) -> bool:
        """Java's ``isBalanced()`` (KAFKA-15106 "+1" form). A consumer short of its maximum is
        unbalanced against any owner of one of its topics' partitions holding more than
        size + 1; the owner can never be the consumer itself, so a per-topic maximum
        owner size is enough."""
        if not len(self.sorted):
            raise AssignorError("NoSuchElementException", "isBalanced on an empty consumer set")
        low, high = self._size(self.sorted.first()), self._size(self.sorted.last())
        if low >= high - 1:
            return True
        if self.irregular:
            return self._literal_is_balanced()
        topic_max: dict[str, int] = {}
        for consumer in self.sorted:
            size = len(self.current[consumer])
            if size == self.max_assignment_size(consumer):
                continue
            for topic in self.topics_of[consumer]:
                if topic not in topic_max:
                    owners = self._topic_owners.get(topic, {})
                    topic_max[topic] = max((self._size(o) for o in owners), default=0)
                if topic_max[topic] > size + 1:
                    return False
        return True

    def _literal_is_balanced(self) -> bool:
        """Java's scan as written: a partition -> owner map filled in the ``currentAssignment``
        ``HashMap`` order (the last holder of a doubly-held partition wins), then for each
        consumer short of its maximum every partition index of its topics it does not hold."""
        holder: dict[TopicPartition, str] = {}
        for consumer in self.member_order:
            for tp in self.current.get(consumer, ()):
                holder[tp] = consumer
        for consumer in self.sorted:
            size = len(self.current[consumer])
            if size == self.max_assignment_size(consumer):
                continue
            mine = set(self.current[consumer])
            for topic in self.topics_of[consumer]:
                for i in range(len(self.ppt[topic])):
                    tp = TopicPartition(topic, i)
                    if tp not in mine and self._size(holder.get(tp)) > size + 1:
                        return False
        return True


def _is_irregular(ppt: PartitionsPerTopic, ids: PartitionIds, owned: Mapping[str, list[TopicPartition]]) -> bool:
    """Java's ``isBalanced()`` reads partitions 0..count-1 through a partition -> owner map.
    Partition ids outside that range (an owned id of a topic re-created smaller) stall
    Java's merge walk and can double-assign; then the literal Java scans are used
    instead of the fast equivalents, which assume one owner per partition."""
    if any(list(topic_ids) != list(range(len(topic_ids))) for topic_ids in ids.values()):
        return True
    return any(tp.topic in ppt and not 0 <= tp.partition < len(ppt[tp.topic]) for tps in owned.values() for tp in tps)


def _balance_score(lists: Mapping[str, list[TopicPartition]]) -> int:
    """Sum over unordered consumer pairs of |size difference|, in O(n log n)."""
    sizes = sorted(len(tps) for tps in lists.values())
    n = len(sizes)
    return sum(s * (2 * i - n + 1) for i, s in enumerate(sizes))
