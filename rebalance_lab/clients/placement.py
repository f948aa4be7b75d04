"""Replica placement on topic creation, identical to Kafka's Java code (spec/assignors.md §9).

Two algorithms, one per emulated flavor:

* ``"adminutils"`` — ``org.apache.kafka.admin.AdminUtils.assignReplicasToBrokers`` (ZooKeeper
  era, Kafka ≤ 3.9; the kafka-3 flavor): rack-unaware round robin with a shifted follower, or
  the rack-aware variant over a rack-alternated broker list.
* ``"striped"`` — ``org.apache.kafka.metadata.placement.StripedReplicaPlacer`` (KRaft
  controllers; the kafka-4 flavor).

Both draw from ``java.util.Random``; :mod:`rebalance_lab.clients.java_random` ports it, so a
given seed reproduces Java's output exactly. The entry point is :func:`place_replicas`.
"""

from __future__ import annotations

import random as _random
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar

from rebalance_lab.clients.java_random import JavaRandom, JavaRandomSource, java_shuffle

__all__ = [
    "AdminOperationError",
    "BrokerInfo",
    "InvalidPartitionsError",
    "InvalidReplicationFactorError",
    "PlacementAlgorithm",
    "PlacementError",
    "RackAwareMode",
    "java_hashmap_put_order",
    "java_string_hash",
    "place_replicas",
    "rack_alternated_broker_list",
]

PlacementAlgorithm = Literal["adminutils", "striped"]
RackAwareMode = Literal["enforced", "safe", "disabled"]

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class BrokerInfo:
    """A broker as placement sees it.

    ``fenced`` only matters to ``"striped"`` (KRaft ``UsableBroker.fenced``): a fenced broker
    never leads, and a rack offers it as a follower only after its unfenced brokers.
    ``AdminUtils`` knows only live brokers and ignores the flag.
    """

    id: int
    rack: str | None = None
    fenced: bool = False


class PlacementError(ValueError):
    """Invalid placement request. ``error_name`` is the Kafka error the broker answers with."""

    error_name = "INVALID_REQUEST"


class InvalidReplicationFactorError(PlacementError):
    """Java ``InvalidReplicationFactorException``."""

    error_name = "INVALID_REPLICATION_FACTOR"


class InvalidPartitionsError(PlacementError):
    """Java ``InvalidPartitionsException``."""

    error_name = "INVALID_PARTITIONS"


class AdminOperationError(PlacementError):
    """Java ``AdminOperationException`` (only some brokers have a rack, rack-aware requested).

    It is not an ``ApiException``, so a ZooKeeper-era broker answered it, as far as we know
    (unconfirmed against a broker), with ``UNKNOWN_SERVER_ERROR`` and the message.
    """

    error_name = "UNKNOWN_SERVER_ERROR"


def place_replicas(
    brokers: Sequence[BrokerInfo],
    partitions: int,
    replication_factor: int,
    *,
    algorithm: PlacementAlgorithm = "striped",
    seed: int | None = None,
    rng: JavaRandomSource | None = None,
    fixed_start_index: int = -1,
    start_partition_id: int = -1,
    rack_aware_mode: RackAwareMode = "enforced",
) -> list[list[int]]:
    """Replica lists (preferred leader first) for ``partitions`` new partitions, in order.

    Randomness: pass ``rng`` (e.g. one long-lived :class:`JavaRandom`, as a KRaft controller
    keeps one ``Random`` for its whole life) or ``seed`` (a fresh ``java.util.Random(seed)``);
    with neither, an unpredictable seed is used, like Java's unseeded ``new Random()``.

    ``fixed_start_index``/``start_partition_id`` are ``AdminUtils``'s parameters (used when
    partitions are added to a topic); ``rack_aware_mode`` is the ZooKeeper-era
    ``RackAwareMode`` (``safe`` drops racks unless every broker has one, ``disabled`` always
    drops them). Both are rejected for ``"striped"``, which has no such inputs.

    ``brokers`` are used in the order given. ``AdminUtils``'s ZooKeeper callers pass them
    sorted by id (rack-aware mode re-sorts anyway). ``StripedReplicaPlacer`` sorts brokers and
    rack names itself; the input order survives only in its rack ``HashMap``, where racks
    sharing a bucket keep insertion order.

    Raises :class:`PlacementError` subclasses with Kafka's messages.
    """
    _check_unique_ids(brokers)
    source = rng if rng is not None else JavaRandom(seed if seed is not None else _random.getrandbits(48))
    if algorithm == "adminutils":
        return _admin_utils(
            _apply_rack_mode(brokers, rack_aware_mode),
            partitions,
            replication_factor,
            source,
            fixed_start_index,
            start_partition_id,
        )
    if algorithm == "striped":
        if fixed_start_index != -1 or start_partition_id != -1 or rack_aware_mode != "enforced":
            raise ValueError("fixed_start_index/start_partition_id/rack_aware_mode apply to adminutils only")
        return _striped(brokers, partitions, replication_factor, source)
    raise ValueError(f"unknown placement algorithm {algorithm!r}")


def _check_unique_ids(brokers: Sequence[BrokerInfo]) -> None:
    ids = [b.id for b in brokers]
    if len(set(ids)) != len(ids):
        raise ValueError(f"duplicate broker ids in {ids}")


def _apply_rack_mode(brokers: Sequence[BrokerInfo], mode: RackAwareMode) -> Sequence[BrokerInfo]:
    """``AdminZkClient.getBrokerMetadatas(rackAwareMode)`` (kafka/admin/RackAwareMode.scala)."""
    if mode == "disabled" or (mode == "safe" and any(b.rack is None for b in brokers)):
        return [BrokerInfo(b.id) for b in brokers]
    return brokers


# --------------------------------------------------------------------------- AdminUtils


def _admin_utils(
    brokers: Sequence[BrokerInfo],
    partitions: int,
    rf: int,
    rnd: JavaRandomSource,
    fixed_start_index: int,
    start_partition_id: int,
) -> list[list[int]]:
    """``AdminUtils.assignReplicasToBrokers`` (server-common 3.9.2): validation then mode choice."""
    if partitions <= 0:
        raise InvalidPartitionsError("Number of partitions must be larger than 0.")
    if rf <= 0:
        raise InvalidReplicationFactorError("Replication factor must be larger than 0.")
    if rf > len(brokers):
        raise InvalidReplicationFactorError(f"Replication factor: {rf} larger than available brokers: {len(brokers)}.")
    if all(b.rack is None for b in brokers):
        ordered = [b.id for b in brokers]
        start, shift = _start_and_shift(len(ordered), rnd, fixed_start_index)
        return _admin_rack_unaware(ordered, partitions, rf, start, shift, start_partition_id)
    if any(b.rack is None for b in brokers):
        raise AdminOperationError("Not all brokers have rack information for replica rack aware assignment.")
    rack_of = {b.id: b.rack for b in brokers if b.rack is not None}
    ordered = rack_alternated_broker_list(rack_of)
    start, shift = _start_and_shift(len(ordered), rnd, fixed_start_index)
    return _admin_rack_aware(ordered, rack_of, partitions, rf, start, shift, start_partition_id)


def _start_and_shift(n: int, rnd: JavaRandomSource, fixed_start_index: int) -> tuple[int, int]:
    """Java draws the start index first, then the replica shift (both ``RAND.nextInt(n)``)."""
    if fixed_start_index >= 0:
        return fixed_start_index, fixed_start_index
    start = rnd.next_int(n)
    return start, rnd.next_int(n)


def _replica_index(first: int, shift: int, j: int, n: int) -> int:
    """``AdminUtils.replicaIndex``: the ``1 +`` keeps a follower off the leader's slot."""
    return (first + 1 + (shift + j) % (n - 1)) % n


def _admin_rack_unaware(
    ids: list[int], partitions: int, rf: int, start: int, shift: int, start_partition_id: int
) -> list[list[int]]:
    n = len(ids)
    result: list[list[int]] = []
    partition_id = max(0, start_partition_id)
    for _ in range(partitions):
        # After each full round over the brokers the followers move one slot further.
        if partition_id > 0 and partition_id % n == 0:
            shift += 1
        first = (partition_id + start) % n
        result.append([ids[first]] + [ids[_replica_index(first, shift, j, n)] for j in range(rf - 1)])
        partition_id += 1
    return result


def _admin_rack_aware(
    ordered: list[int],
    rack_of: dict[int, str],
    partitions: int,
    rf: int,
    start: int,
    shift: int,
    start_partition_id: int,
) -> list[list[int]]:
    n = len(ordered)
    num_racks = len(set(rack_of.values()))
    result: list[list[int]] = []
    partition_id = max(0, start_partition_id)
    for _ in range(partitions):
        if partition_id > 0 and partition_id % n == 0:
            shift += 1
        first = (partition_id + start) % n
        result.append(_rack_aware_replicas(ordered, rack_of, first, shift * num_racks, rf, num_racks))
        partition_id += 1
    return result


def _rack_aware_replicas(
    ordered: list[int], rack_of: dict[int, str], first: int, shift: int, rf: int, num_racks: int
) -> list[int]:
    """Followers of one partition: probe the alternated list, skipping brokers whose rack
    (or the broker itself) already holds a replica while some rack (broker) has none.
    The probe counter ``k`` keeps counting across followers, as in Java."""
    n = len(ordered)
    leader = ordered[first]
    replicas = [leader]
    racks_used = {rack_of[leader]}
    brokers_used = {leader}
    k = 0
    for _ in range(rf - 1):
        while True:
            broker = ordered[_replica_index(first, shift, k, n)]
            rack = rack_of[broker]
            k += 1
            rack_ok = rack not in racks_used or len(racks_used) == num_racks
            broker_ok = broker not in brokers_used or len(brokers_used) == n
            if rack_ok and broker_ok:
                replicas.append(broker)
                racks_used.add(rack)
                brokers_used.add(broker)
                break
    return replicas


def rack_alternated_broker_list(rack_of: dict[int, str]) -> list[int]:
    """``AdminUtils.getRackAlternatedBrokerList``: one broker per rack in turn.

    Racks sorted by name (Java ``String`` order), brokers of a rack by id; independent of the
    input order, e.g. {0:rack1, 1:rack3, 2:rack3, 3:rack2, 4:rack2, 5:rack1} → 0, 3, 1, 5, 4, 2.
    """
    by_rack: dict[str, list[int]] = {}
    for broker, rack in rack_of.items():
        by_rack.setdefault(rack, []).append(broker)
    queues = [sorted(by_rack[rack], reverse=True) for rack in sorted(by_rack, key=_java_string_key)]
    result: list[int] = []
    while len(result) < len(rack_of):
        for queue in queues:
            if queue:
                result.append(queue.pop())
    return result


# --------------------------------------------------------------------------- StripedReplicaPlacer


class _BrokerList:
    """``StripedReplicaPlacer.BrokerList``: a sorted list read from a rotating offset, at
    most once per broker per epoch."""

    def __init__(self) -> None:
        self.brokers: list[int] = []
        self.index = 0
        self.offset = 0
        self.epoch = 0

    def initialize(self, rnd: JavaRandomSource) -> None:
        # Empty lists draw nothing: the number of draws depends on the fencing layout.
        if self.brokers:
            self.brokers.sort()
            self.offset = rnd.next_int(len(self.brokers))

    def next(self, epoch: int) -> int:
        if not self.brokers:
            return -1
        size = len(self.brokers)
        if self.epoch != epoch:
            self.epoch = epoch
            self.index = 0
            self.offset = (self.offset + 1) % size
        if self.index >= size:
            return -1
        broker = self.brokers[(self.index + self.offset) % size]
        self.index += 1
        return broker


class _Rack:
    """``StripedReplicaPlacer.Rack``: Java always handles ``fenced`` before ``unfenced``."""

    def __init__(self) -> None:
        self.fenced = _BrokerList()
        self.unfenced = _BrokerList()

    def initialize(self, rnd: JavaRandomSource) -> None:
        self.fenced.initialize(rnd)
        self.unfenced.initialize(rnd)

    def shuffle(self, rnd: JavaRandomSource) -> None:
        java_shuffle(self.fenced.brokers, rnd)
        java_shuffle(self.unfenced.brokers, rnd)

    def next(self, epoch: int) -> int:
        broker = self.unfenced.next(epoch)
        return broker if broker >= 0 else self.fenced.next(epoch)


class _RackList:
    """``StripedReplicaPlacer.RackList`` (kafka-metadata 4.4.0), built afresh per ``place`` call."""

    def __init__(self, rnd: JavaRandomSource, brokers: Sequence[BrokerInfo]) -> None:
        self.rnd = rnd
        self.racks: dict[str | None, _Rack] = {}
        for broker in brokers:
            rack = self.racks.setdefault(broker.rack, _Rack())
            (rack.fenced if broker.fenced else rack.unfenced).brokers.append(broker.id)
        # Java keeps racks in a HashMap<Optional<String>, Rack>; initialisation and every
        # reshuffle walk it in HashMap order, which decides the order of the random draws.
        self.map_order = java_hashmap_put_order(list(self.racks), _optional_string_hash)
        for name in self.map_order:
            self.racks[name].initialize(rnd)
        # OptionalStringComparator: absent rack first, then by name.
        self.names = sorted(self.racks, key=lambda r: (r is not None, _java_string_key(r or "")))
        self.total = len(brokers)
        self.unfenced = sum(1 for b in brokers if not b.fenced)
        self.epoch = 0
        self.offset = rnd.next_int(len(self.names)) if self.names else 0

    def check(self, rf: int) -> None:
        _check_positive(rf)
        _check_enough_brokers(rf, self.total)
        _check_not_all_fenced(self.unfenced)

    def place(self, rf: int) -> list[int]:
        self.check(rf)
        # After handing out as many leaders as there are unfenced brokers, reshuffle so that
        # the next round does not repeat the same replica sets (not for a single broker, which
        # would loop forever in Java).
        if self.epoch == self.unfenced and self.unfenced > 1:
            self._shuffle()
            self.epoch = 0
        if self.offset == len(self.names):
            self.offset = 0
        leader, leader_rack = self._leader()
        replicas = [leader, *self._followers(rf, leader_rack)]
        self.epoch += 1
        self.offset += 1
        return replicas

    def _shuffle(self) -> None:
        java_shuffle(self.names, self.rnd)
        for name in self.map_order:
            self.racks[name].shuffle(self.rnd)

    def _leader(self) -> tuple[int, int]:
        index = self.offset
        while True:
            broker = self.racks[self.names[index]].unfenced.next(self.epoch)
            if broker >= 0:
                return broker, index
            index = (index + 1) % len(self.names)

    def _followers(self, rf: int, leader_rack: int) -> list[int]:
        followers: list[int] = []
        index = self.offset
        skip = leader_rack
        for _ in range(rf - 1):
            broker = -1
            while broker < 0:
                # The leader's rack is skipped the first time the cursor reaches it only.
                if index == skip:
                    skip = -1
                else:
                    broker = self.racks[self.names[index]].next(self.epoch)
                index = (index + 1) % len(self.names)
            followers.append(broker)
        return followers


def _striped(brokers: Sequence[BrokerInfo], partitions: int, rf: int, rnd: JavaRandomSource) -> list[list[int]]:
    """``StripedReplicaPlacer.place``: the rack list (and its random draws) comes first, then
    the checks in the order non-positive, all fenced, too few brokers."""
    racks = _RackList(rnd, brokers)
    _check_positive(rf)
    _check_not_all_fenced(racks.unfenced)
    _check_enough_brokers(rf, racks.total)
    if partitions < 0:
        # Java fails here too (``new ArrayList<>(negative)``); the controller validates earlier.
        raise InvalidPartitionsError(f"Illegal number of partitions: {partitions}")
    return [racks.place(rf) for _ in range(partitions)]


# The messages are kafka-metadata 4.4.0's, which mention cordoned log directories; spec §9.2
# quotes the shorter wording of the Oct 2024 trunk. Clients show them verbatim.


def _check_positive(rf: int) -> None:
    if rf <= 0:
        raise InvalidReplicationFactorError(
            f"Invalid replication factor {rf}: the replication factor must be positive."
        )


def _check_not_all_fenced(unfenced: int) -> None:
    if unfenced == 0:
        raise InvalidReplicationFactorError(
            "All brokers are currently fenced, or have all their log directories cordoned."
        )


def _check_enough_brokers(rf: int, total: int) -> None:
    if rf > total:
        raise InvalidReplicationFactorError(
            f"The target replication factor of {rf} cannot be reached because only "
            f"{total} broker(s) are registered or some brokers have all their log directories cordoned."
        )


# --------------------------------------------------------------------------- Java helpers


def _java_string_key(s: str) -> bytes:
    """Sort key giving Java ``String.compareTo`` order (UTF-16 code units)."""
    return s.encode("utf-16-be")


def java_string_hash(s: str) -> int:
    """Java ``String.hashCode``: sum of unit * 31^(n-1-i) over UTF-16 code units, 32-bit wrap."""
    data = s.encode("utf-16-be")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def _optional_string_hash(value: str | None) -> int:
    """``Optional.hashCode``: the value's hash, 0 when empty."""
    return 0 if value is None else java_string_hash(value)


def java_hashmap_put_order(keys: Sequence[K], hash_of: Callable[[K], int]) -> list[K]:
    """Iteration order of a default-constructed Java ``HashMap`` after ``put`` of ``keys``.

    Model (spec §5.8): buckets by ``(h ^ h >>> 16) & (capacity - 1)``, new keys at the tail of
    their chain, capacity 16 doubling once size exceeds 0.75·capacity (a split keeps relative
    order). A chain growing to 9 nodes makes Java resize below capacity 64 and build a tree
    bin at or above it; tree-bin order is not modelled, so that case raises.
    """
    capacity = 16
    buckets: list[list[tuple[int, K]]] = [[] for _ in range(capacity)]
    size = 0
    for key in keys:
        h = hash_of(key) & 0xFFFFFFFF
        spread = h ^ (h >> 16)
        chain = buckets[spread & (capacity - 1)]
        if any(k == key for _, k in chain):
            continue
        chain.append((spread, key))
        size += 1
        if len(chain) >= 9:
            if capacity >= 64:
                raise ValueError("Java HashMap would build a tree bin here; order not modelled")
            capacity, buckets = _resize(buckets, capacity * 2)
        if size > capacity * 3 // 4:
            capacity, buckets = _resize(buckets, capacity * 2)
    return [key for chain in buckets for _, key in chain]


def _resize(buckets: list[list[tuple[int, K]]], capacity: int) -> tuple[int, list[list[tuple[int, K]]]]:
    resized: list[list[tuple[int, K]]] = [[] for _ in range(capacity)]
    for chain in buckets:
        for spread, key in chain:
            resized[spread & (capacity - 1)].append((spread, key))
    return capacity, resized
