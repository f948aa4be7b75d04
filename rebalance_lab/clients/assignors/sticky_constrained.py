"""Sticky "constrained" builder for equal subscriptions
(``AbstractStickyAssignor.ConstrainedAssignmentBuilder``, KAFKA-12464/KAFKA-16277, spec §5.4)."""

from __future__ import annotations

from itertools import accumulate, chain, filterfalse, islice, repeat
from operator import add, itemgetter, lt

from rebalance_lab.clients.assignors.common import (
    AssignorError,
    PartitionIds,
    PartitionsPerTopic,
    shared_partitions,
    topic_partitions,
    zip_partitions,
)
from rebalance_lab.clients.assignors.java_hashmap import java_str_key, native_order_is_java
from rebalance_lab.clients.assignors.sticky_racks import RackInfo
from rebalance_lab.clients.assignors.types import TopicPartition

Lists = dict[str, list[TopicPartition]]


def _kept_order(tp: TopicPartition) -> tuple[int, bytes]:
    # KAFKA-16277 (3.8.0): owned partitions sorted by partition number, then topic.
    return (tp.partition, java_str_key(tp.topic))


# Plain keys for the native case (Python's str order is Java's): the tuples' own order is (topic, partition).
_topic_of = itemgetter(0)
_partition_of = itemgetter(1)


def _topic_then_partition(tp: TopicPartition) -> tuple[bytes, int]:
    return (java_str_key(tp.topic), tp.partition)


class ConstrainedBuilder:
    """One run of the constrained builder; ``transferring`` is filled while giving partitions."""

    def __init__(
        self,
        ppt: PartitionsPerTopic,
        ids: PartitionIds,
        racks: RackInfo,
        owned: dict[str, list[TopicPartition]],
        multi_owned: set[TopicPartition],
    ) -> None:
        self.ppt = ppt
        self.ids = ids
        self.racks = racks
        self.owned = owned  # iterates in Java HashMap order of the member ids
        self.multi_owned = multi_owned
        total = sum(len(metas) for metas in ppt.values())  # every key, subscribed or not (Q3)
        n = len(owned)
        if n == 0:
            raise AssignorError("ArithmeticException", "/ by zero")  # totalPartitionsCount % 0 (Q7)
        self.min_quota, self.max_quota = total // n, -(-total // n)
        self.expected_over = total % n
        self.current_over = 0
        self.assignment: Lists = {c: [] for c in owned}
        self.maybe_revoked: dict[TopicPartition, str] = {}
        self.under: list[str] = []  # unfilledMembersWithUnderMinQuotaPartitions
        self.exact: list[str] = []  # unfilledMembersWithExactlyMinQuotaPartitions
        self.assigned: list[TopicPartition] = []
        self.transferring: dict[TopicPartition, str] = {}
        self.native = native_order_is_java(ppt)  # owned topics are keys of ppt (step 0 filters)

    def build(self) -> Lists:
        if self._is_fresh():
            self._deal_fresh()
            return self.assignment
        keep_owned = self._keep_owned
        for consumer, partitions in self.owned.items():
            keep_owned(consumer, partitions)
        unassigned = self._unassigned()
        # Collections.sort on member ids: Java String order.
        self.under.sort(key=java_str_key)
        self.exact.sort(key=java_str_key)
        unassigned = self.racks.sort_by_rack_consumers(unassigned)
        if self.racks.enabled:
            unassigned = self._rack_aware_round_robin(unassigned)
        self._round_robin(unassigned)
        self._verify_unfilled()
        return self.assignment

    def _is_fresh(self) -> bool:
        """Nobody owns anything, nothing is double-claimed, and no consumer has a rack (so
        there is no rack sort or rack round robin)."""
        return not (
            self.multi_owned
            or self.racks.enabled
            or self.racks.num_consumers_by_partition
            or any(self.owned.values())
        )

    def _deal_fresh(self) -> None:
        """Steps (b)-(d) when nobody keeps anything, without a per-partition loop.

        Every member is then in one list: under minQuota (if minQuota > 0) or exactly at
        it (if minQuota == 0), both sorted by member id. The round robin serves that list in
        order, pass after pass: in pass k (k < minQuota) the i-th member gets partition
        k*N + i; in pass minQuota each member reaches minQuota and moves, in order, to the
        tail of the exactly-minQuota list, whose head then takes each of the T mod N
        leftovers. So the i-th member gets every N-th partition from the i-th on. The
        ``TopicPartition``s are made per member, so each member's partitions lie together
        in memory (the cyclic GC's first pass over them is then much faster).
        """
        members = sorted(self.assignment, key=java_str_key)
        n = len(members)
        topics = sorted(self.ppt, key=java_str_key)
        shared = shared_partitions(topics, self.ids)
        if shared is not None:  # a small group: slices of the partitions made once
            for i, member in enumerate(members):
                self.assignment[member] = shared[i::n]
            return
        # The unassigned list (topics by name, ids ascending) as two columns.
        names = list(chain.from_iterable(repeat(t, len(self.ids[t])) for t in topics))
        ids = list(chain.from_iterable(self.ids[t] for t in topics))
        for i, member in enumerate(members):
            self.assignment[member] = zip_partitions(names[i::n], ids[i::n])

    def _keep_owned(self, consumer: str, partitions: list[TopicPartition]) -> None:
        """Keep up to min/maxQuota owned partitions; the surplus is "maybe revoked"."""
        kept: list[TopicPartition] = []
        if not self.racks.consumer_racks:  # not enabled: racks_mismatch is always False then
            kept = list(partitions)
        else:
            for tp in partitions:
                if self.racks.racks_mismatch(consumer, tp):
                    self.maybe_revoked[tp] = consumer
                else:
                    kept.append(tp)
        if self.native:
            # (partition, topic) order as two stable sorts, without a key tuple per partition: by the tuples'
            # own (topic, partition) order, which is Java's here (owned lists mostly come in it already: one
            # pass), then by partition alone (int keys).
            kept.sort()
            kept.sort(key=_partition_of)
        else:
            kept.sort(key=_kept_order)
        if self.multi_owned:
            kept = [tp for tp in kept if tp not in self.multi_owned]
        if len(kept) < self.min_quota:
            self._keep(consumer, kept, len(kept))
            self.under.append(consumer)
        elif len(kept) >= self.max_quota and self.current_over < self.expected_over:
            self.current_over += 1
            if self.current_over == self.expected_over:
                self.exact.clear()
            self._keep(consumer, kept, self.max_quota)
        else:
            self._keep(consumer, kept, self.min_quota)
            if self.current_over < self.expected_over:
                self.exact.append(consumer)

    def _keep(self, consumer: str, kept: list[TopicPartition], count: int) -> None:
        if count < len(kept):
            self.maybe_revoked.update(dict.fromkeys(kept[count:], consumer))
            kept = kept[:count]
        self.assignment[consumer].extend(kept)
        self.assigned.extend(kept)

    def _unassigned(self) -> list[TopicPartition]:
        """All partitions (topics by name, indexes 0..count-1) minus the kept ones, by Java's
        merge walk over the sorted kept list. The walk assumes every kept partition exists:
        a kept id beyond the topic's count stalls it and Java then lists the rest as
        unassigned -- reproduced on purpose."""
        topics = sorted(self.ppt, key=java_str_key)
        out: list[TopicPartition] = []
        if not self.assigned:
            # getAllTopicPartitions uses the metadata's partition ids.
            shared = shared_partitions(topics, self.ids)
            if shared is not None:
                return shared
            for t in topics:
                out.extend(topic_partitions(t, self.ids[t]))
            return out
        fast = self._unassigned_shared(topics)
        if fast is None:
            fast = self._unassigned_by_difference(topics)
        if fast is not None:
            return fast
        kept = sorted(self.assigned, key=_topic_then_partition)
        pos, add_directly = 0, False
        for topic in topics:
            for i in range(len(self.ppt[topic])):
                nxt = kept[pos]
                if add_directly or not (nxt.topic == topic and nxt.partition == i):
                    out.append(TopicPartition(topic, i))
                elif pos + 1 < len(kept):
                    pos += 1
                else:
                    add_directly = True
        return out

    def _unassigned_shared(self, topics: list[str]) -> list[TopicPartition] | None:
        """:meth:`_unassigned_by_difference` for a small group, over its :func:`shared_partitions`:
        they are distinct, so when as many were left out as were kept, and the kept ones are
        distinct, every kept partition is one of them (the walk cannot stall)."""
        shared = shared_partitions(topics, {t: range(len(self.ppt[t])) for t in topics})
        if shared is None:
            return None
        kept = set(self.assigned)
        out = list(filterfalse(kept.__contains__, shared))
        return out if len(kept) == len(self.assigned) == len(shared) - len(out) else None

    def _unassigned_by_difference(self, topics: list[str]) -> list[TopicPartition] | None:
        """The merge walk's result when it cannot stall: kept partitions distinct and all within
        0..count-1 of a known topic. Then it is a plain difference, taken here on ints without
        a Python loop per partition: partition i of a topic is numbered i + the partition
        counts of the topics before it. ``None`` when that does not hold (the caller walks
        as Java does)."""
        kept = self.assigned
        counts = [len(self.ppt[t]) for t in topics]
        count_of = dict(zip(topics, counts, strict=True))
        kept_topics = list(map(_topic_of, kept))
        kept_ids = list(map(_partition_of, kept))
        if not count_of.keys() >= set(kept_topics):
            return None
        if min(kept_ids) < 0 or not all(map(lt, kept_ids, map(count_of.__getitem__, kept_topics))):
            return None
        first = dict(zip(topics, accumulate(counts, initial=0), strict=False))  # drops the final total
        taken = set(map(add, map(first.__getitem__, kept_topics), kept_ids))
        if len(taken) != len(kept):
            return None
        missing = list(filterfalse(taken.__contains__, range(sum(counts))))
        names = list(chain.from_iterable(map(repeat, topics, counts)))
        indexes = list(chain.from_iterable(map(range, counts)))
        return zip_partitions(map(names.__getitem__, missing), map(indexes.__getitem__, missing))

    def _rack_aware_round_robin(self, unassigned: list[TopicPartition]) -> list[TopicPartition]:
        """Round robin within racks; returns the partitions still unassigned, in order."""
        remaining: list[TopicPartition] = []
        start = 0
        for tp in unassigned:
            consumer: str | None = None
            index = self.racks.next_rack_consumer(tp, self.under, start)
            if index >= 0:
                consumer = self.under[index]
                count = len(self.assignment[consumer]) + 1
                if count >= self.min_quota:
                    self.under.remove(consumer)
                    if count < self.max_quota and self.current_over < self.expected_over:
                        self.exact.append(consumer)
                else:
                    index += 1
                start = index % len(self.under) if self.under else 0
            elif self.exact:
                consumer = self._rack_consumer_at_min_quota(tp)
            if consumer is None:
                remaining.append(tp)
            else:
                self._give(tp, consumer)
        return remaining

    def _rack_consumer_at_min_quota(self, tp: TopicPartition) -> str | None:
        first = self.racks.next_rack_consumer(tp, self.exact, 0)
        if first < 0:
            return None
        consumer = self.exact[first]
        if len(self.assignment[consumer]) + 1 == self.max_quota:
            del self.exact[first]
            self._count_over()
        return consumer

    def _count_over(self) -> None:
        self.current_over += 1
        # Once enough members hold maxQuota, members at minQuota are filled.
        if self.current_over == self.expected_over:
            self.exact.clear()

    def _round_robin(self, unassigned: list[TopicPartition]) -> None:
        """Java walks an ``Iterator`` over the under-minQuota list, restarting it when
        exhausted, and polls the head of the exactly-minQuota list once nobody is under."""
        under, exact, assignment = self.under, self.exact, self.assignment
        min_quota, max_quota = self.min_quota, self.max_quota
        # _give inlined: nothing can be transferring unless something was revoked or multi-owned.
        track = bool(self.maybe_revoked or self.multi_owned)
        it, last = 0, -1  # next index of the iterator, index of its last returned element
        start = 0 if track else self._full_passes(unassigned)
        if start:
            it, last = len(under), len(under) - 1  # where the iterator stands after whole passes
        for tp in islice(unassigned, start, None):
            if it < len(under):
                consumer, last, it = under[it], it, it + 1
            elif not under and not exact:
                raise AssignorError("IllegalStateException", "No more unfilled consumers to be assigned.")
            elif not under:
                consumer = exact.pop(0)
            else:
                consumer, last, it = under[0], 0, 1
            partitions = assignment[consumer]
            partitions.append(tp)
            if track:
                self._track_transfer(tp, consumer)
            count = len(partitions)
            if count == min_quota:
                if last < 0:
                    raise AssignorError("IllegalStateException", "iterator remove() without next()")
                del under[last]
                it, last = it - 1, -1
                exact.append(consumer)
            elif count == max_quota:
                self.current_over += 1

    def _full_passes(self, unassigned: list[TopicPartition]) -> int:
        """The round robin's leading whole passes over the under-minQuota list in which nobody
        reaches minQuota (so no list, count or iterator event happens), done with strided
        slices: the i-th member gets every n-th partition from the i-th on. Returns how many
        partitions were given."""
        under = self.under
        n = len(under)
        if not n:
            return 0
        passes = min(self.min_quota - 1 - max(len(self.assignment[c]) for c in under), len(unassigned) // n)
        if passes <= 0:
            return 0
        end = passes * n
        for i, consumer in enumerate(under):
            self.assignment[consumer].extend(unassigned[i:end:n])
        return end

    def _give(self, tp: TopicPartition, consumer: str) -> int:
        partitions = self.assignment[consumer]
        partitions.append(tp)
        self._track_transfer(tp, consumer)
        return len(partitions)

    def _track_transfer(self, tp: TopicPartition, consumer: str) -> None:
        revoked_from = self.maybe_revoked.get(tp)
        if (revoked_from is not None and revoked_from != consumer) or tp in self.multi_owned:
            self.transferring[tp] = consumer

    def _verify_unfilled(self) -> None:
        if not self.under:
            return
        if self.current_over != self.expected_over:
            raise AssignorError(
                "IllegalStateException",
                "We haven't reached the expected number of members with more than the minQuota partitions, "
                "but no more partitions to be assigned",
            )
        for member in self.under:
            if len(self.assignment[member]) != self.min_quota:
                raise AssignorError(
                    "IllegalStateException",
                    f"Consumer: [{member}] doesn't reach minQuota partitions, and no more partitions to be assigned",
                )
