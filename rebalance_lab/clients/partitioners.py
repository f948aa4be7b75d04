"""Producer partitioning exactly as Kafka's Java producer does it (spec/assignors.md §8).

* :func:`murmur2` / :func:`to_positive` / :func:`partition_for_key`: keyed records
  (``Utils.murmur2``, ``Utils.toPositive``, ``BuiltInPartitioner.partitionForKey``).
* :class:`BuiltInPartitioner`: the KIP-794 uniform sticky partitioner used for records
  without a key (3.3+), as a sans-I/O object fed with what ``RecordAccumulator`` feeds the
  Java class (appended byte counts, whether switching is allowed, queue sizes).
* :class:`RoundRobinPartitioner`: ``org.apache.kafka.clients.producer.RoundRobinPartitioner``.

Everything here is pure: no I/O, no clock, randomness injected.
"""

from __future__ import annotations

import bisect
import random as _random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rebalance_lab.clients.java_random import to_int32

__all__ = [
    "BuiltInPartitioner",
    "PartitionLoadStats",
    "RoundRobinPartitioner",
    "TopicPartitions",
    "build_load_stats",
    "murmur2",
    "partition_for_key",
    "to_positive",
]

_MASK_32 = 0xFFFFFFFF
_SEED = 0x9747B28C
_M = 0x5BD1E995
_R = 24


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2``: MurmurHash2, 32-bit, returned as a **signed** Java int.

    kafka-python and aiokafka return the unsigned value; Kafka returns the signed one
    (spec §8.2), so e.g. ``murmur2(b"21") == -973932308``. Arithmetic is done on unsigned
    32-bit values, which is equivalent to Java's wrapping int arithmetic with ``>>>``.
    """
    length = len(data)
    h = (_SEED ^ length) & _MASK_32
    full = length - length % 4
    for i in range(0, full, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * _M) & _MASK_32
        k ^= k >> _R
        k = (k * _M) & _MASK_32
        h = (h * _M) & _MASK_32
        h ^= k
    tail = length % 4
    # Java's switch falls through 3 -> 2 -> 1; the multiply happens once, after byte 0.
    if tail == 3:
        h ^= data[full + 2] << 16
    if tail >= 2:
        h ^= data[full + 1] << 8
    if tail >= 1:
        h ^= data[full]
        h = (h * _M) & _MASK_32
    h ^= h >> 13
    h = (h * _M) & _MASK_32
    h ^= h >> 15
    return to_int32(h)


def to_positive(number: int) -> int:
    """``Utils.toPositive``: a mask, not ``abs`` (``Integer.MIN_VALUE`` maps to 0)."""
    return number & 0x7FFFFFFF


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """``BuiltInPartitioner.partitionForKey``: the partition of a record with a non-null key.

    An empty key is a key (it is hashed); ``num_partitions`` is **all** partitions of the
    topic, available or not (spec §8.1 step 3).
    """
    if num_partitions <= 0:
        raise ValueError("num_partitions must be positive")
    return to_positive(murmur2(key)) % num_partitions


@dataclass(frozen=True)
class TopicPartitions:
    """The part of Java's ``Cluster`` a partitioner reads for one topic.

    ``available`` lists the partition ids that have a leader, in metadata order
    (``Cluster.availablePartitionsForTopic``).
    """

    num_partitions: int
    available: tuple[int, ...] = ()

    @staticmethod
    def all_available(num_partitions: int) -> TopicPartitions:
        return TopicPartitions(num_partitions, tuple(range(num_partitions)))


def _java_random_int() -> int:
    """Stand-in for ``ThreadLocalRandom.current().nextInt()``, which Java cannot seed."""
    return to_int32(_random.getrandbits(32))


@dataclass(frozen=True)
class PartitionLoadStats:
    """``BuiltInPartitioner.PartitionLoadStats``: a cumulative frequency table (CFT)."""

    cumulative_frequency_table: tuple[int, ...]
    partition_ids: tuple[int, ...]

    def pick(self, random_value: int) -> int:
        """Map a non-negative random int to a partition, weighted by the CFT.

        Java binary-searches for the first entry **strictly greater** than
        ``random % CFT[last]``; ``bisect_right`` is exactly that index.
        """
        weighted = random_value % self.cumulative_frequency_table[-1]
        return self.partition_ids[bisect.bisect_right(self.cumulative_frequency_table, weighted)]


def build_load_stats(
    queue_sizes: Sequence[int], partition_ids: Sequence[int], length: int | None = None
) -> PartitionLoadStats | None:
    """``BuiltInPartitioner.updatePartitionLoadStats`` without the in-place mutation.

    ``queue_sizes``/``partition_ids`` cover every partition of the topic that has a leader;
    only the first ``length`` entries count (``RecordAccumulator`` shortens the logical length
    when it excludes slow brokers). Returns ``None`` where Java stores no stats (uniform mode).
    """
    if len(queue_sizes) != len(partition_ids):
        raise ValueError("queue_sizes and partition_ids differ in length")
    n = len(queue_sizes) if length is None else length
    # Java: fewer than 2 partitions in the topic, or none left after exclusions -> uniform.
    if n < 1 or len(queue_sizes) < 2:
        return None
    live = list(queue_sizes[:n])
    max_plus_one = max(live) + 1
    # Equal queues need no weighting, unless partitions were excluded (then the weighting
    # is what keeps the excluded ones out).
    if len(set(live)) == 1 and n == len(queue_sizes):
        return None
    cft: list[int] = []
    running = 0
    for size in live:
        running += max_plus_one - size
        cft.append(running)
    return PartitionLoadStats(tuple(cft), tuple(partition_ids[:n]))


class BuiltInPartitioner:
    """One topic's KIP-794 uniform sticky partitioner (``producer.internals.BuiltInPartitioner``).

    The producer keeps sending to one *sticky* partition and switches once enough bytes went
    there. The caller (our emulated ``RecordAccumulator``) drives it:

    1. :meth:`current_partition` before an append (picks a partition if there is none);
    2. :meth:`on_append` after it, with the bytes appended and whether switching is allowed
       (Java allows it only when every batch queued for the partition is full, so a partly
       filled batch is not abandoned; an append that finds all batches full calls it with 0
       bytes first);
    3. :meth:`update_load_stats` whenever the sender computes queue sizes (adaptive mode).

    ``random_int`` replaces Java's ``ThreadLocalRandom.current().nextInt()`` (a signed int32);
    inject a deterministic source in tests. The choice after a switch may repeat the old
    partition, as in Java.
    """

    def __init__(
        self,
        topic: str,
        sticky_batch_size: int = 16384,
        *,
        random_int: Callable[[], int] | None = None,
    ) -> None:
        if sticky_batch_size < 1:
            raise ValueError(f"stickyBatchSize must be >= 1 but got {sticky_batch_size}")
        self.topic = topic
        self.sticky_batch_size = sticky_batch_size
        self._random_int = random_int or _java_random_int
        self._load_stats: PartitionLoadStats | None = None
        self._partition: int | None = None
        self._produced_bytes = 0

    @property
    def load_stats(self) -> PartitionLoadStats | None:
        return self._load_stats

    @property
    def produced_bytes(self) -> int:
        """Bytes appended to the current sticky partition so far."""
        return self._produced_bytes

    def next_partition(self, partitions: TopicPartitions) -> int:
        """Java ``nextPartition``: a fresh random choice (uniform, or weighted by load)."""
        r = to_positive(self._random_int())
        if self._load_stats is not None:
            return self._load_stats.pick(r)
        if partitions.available:
            return partitions.available[r % len(partitions.available)]
        return r % partitions.num_partitions

    def current_partition(self, partitions: TopicPartitions) -> int:
        """Java ``peekCurrentPartitionInfo``: the sticky partition, chosen on first use."""
        if self._partition is None:
            self._switch(partitions)
        assert self._partition is not None
        return self._partition

    def on_append(self, appended_bytes: int, partitions: TopicPartitions, *, switch_allowed: bool = True) -> int:
        """Java ``updatePartitionInfo``: count bytes, maybe switch; returns the sticky partition.

        Switches once ``produced >= batch.size`` if allowed, and unconditionally at
        ``2 * batch.size`` (Java caps the wait so a never-ready batch cannot pin the producer).
        """
        self.current_partition(partitions)
        self._produced_bytes += appended_bytes
        produced = self._produced_bytes
        if (produced >= self.sticky_batch_size and switch_allowed) or produced >= 2 * self.sticky_batch_size:
            self._switch(partitions)
        assert self._partition is not None
        return self._partition

    def update_load_stats(
        self, queue_sizes: Sequence[int], partition_ids: Sequence[int], length: int | None = None
    ) -> None:
        """Java ``updatePartitionLoadStats`` (see :func:`build_load_stats`)."""
        self._load_stats = build_load_stats(queue_sizes, partition_ids, length)

    def clear_load_stats(self) -> None:
        """Java ``updatePartitionLoadStats(null, ...)``: adaptive partitioning off."""
        self._load_stats = None

    def _switch(self, partitions: TopicPartitions) -> None:
        self._partition = self.next_partition(partitions)
        self._produced_bytes = 0


class RoundRobinPartitioner:
    """``org.apache.kafka.clients.producer.RoundRobinPartitioner`` (keys ignored).

    A per-topic counter starting at 0, advanced on every call; the result indexes the
    available partitions (or all partitions when none is available).

    Kafka ≤ 3.8 asked custom partitioners twice whenever a new batch started (the
    ``onNewBatch`` abort), so every new batch skipped a counter value (KAFKA-9965). Kafka 4.x
    removed ``Partitioner.onNewBatch`` and the abort: the 4.4.0 producer calls
    ``partition()`` exactly once per record, which is what this class models. A caller
    emulating the older producer can call :meth:`partition` an extra time per new batch.
    """

    def __init__(self) -> None:
        self._counters: dict[str, int] = {}

    def partition(self, topic: str, partitions: TopicPartitions) -> int:
        counter = self._counters.get(topic, 0)
        # AtomicInteger.getAndIncrement wraps at Integer.MAX_VALUE; toPositive masks it.
        self._counters[topic] = to_int32(counter + 1)
        value = to_positive(counter)
        if partitions.available:
            return partitions.available[value % len(partitions.available)]
        return value % partitions.num_partitions
