"""Hash-map iteration orders that leak into what clients observe (spec/coordinator.md §7.2-7.3).

The real coordinators keep members and protocol votes in hash maps, so the leader
chosen after a leader leaves, the order of the leader's member list, DescribeGroups'
member order and vote ties all follow those maps' iteration order. We replay:

* ``java.util.HashMap`` (Java coordinator, kafka-4): bucket ``spread & (cap-1)``
  ascending; inside a bucket, insertion order of the keys currently present (a put to
  an existing key does not move it, remove + put moves it to the end). Capacity starts
  at 16, doubles when the size *exceeds* 0.75 x capacity, and never shrinks.
* ``scala.collection.mutable.HashMap`` (Scala 2.13 coordinator, kafka-3): the same
  spread and buckets, but capacity doubles *before* an insert when
  ``size + 1 >= floor(0.75 x capacity)``, and a bucket is ordered by the signed
  spread hash ascending.
* ``immutable.HashMap`` CHAMP order (Scala ``groupBy``, used for the vote count).

Tree bins (8+ colliding keys) are ignored: impossible with UUID member ids (§7.2).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Generic, TypeVar

from rebalance_lab.config import Flavor
from rebalance_lab.coordinator.routing import java_string_hash

V = TypeVar("V")

_INITIAL_CAPACITY = 16


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def spread(key: str) -> int:
    """``HashMap.hash``: ``h ^ (h >>> 16)`` on the Java String hash (signed int32)."""
    h = java_string_hash(key) & 0xFFFFFFFF
    return _int32(h ^ (h >> 16))


def java_capacity_after(size: int, capacity: int = _INITIAL_CAPACITY) -> int:
    """Java grows when the new size exceeds the threshold 0.75 x capacity (13th entry: 16 -> 32)."""
    while size > capacity * 3 // 4:
        capacity *= 2
    return capacity


def scala_capacity_before_insert(size: int, capacity: int) -> int:
    """Scala 2.13 ``mutable.HashMap`` grows before inserting when size + 1 >= floor(0.75 x cap)."""
    while size + 1 >= int(capacity * 0.75):
        capacity *= 2
    return capacity


class OrderedMembers(Generic[V]):
    """A ``str``-keyed map iterated in the order of the flavor's real member map (§7.3)."""

    def __init__(self, flavor: Flavor) -> None:
        self._flavor = flavor
        self._data: dict[str, V] = {}  # Python keeps insertion order, which Java's buckets keep
        self._capacity = _INITIAL_CAPACITY
        self._spreads: dict[str, int] = {}  # each key's hash, computed once
        self._order: list[str] | None = None  # iteration order, recomputed only after a change

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __len__(self) -> int:
        return len(self._data)

    def __getitem__(self, key: str) -> V:
        return self._data[key]

    def get(self, key: str) -> V | None:
        return self._data.get(key)

    def put(self, key: str, value: V) -> None:
        if key not in self._data:
            if self._flavor is Flavor.KAFKA_3:
                self._capacity = scala_capacity_before_insert(len(self._data), self._capacity)
            else:
                self._capacity = java_capacity_after(len(self._data) + 1, self._capacity)
            self._spreads[key] = spread(key)
            self._order = None
        self._data[key] = value

    def pop(self, key: str) -> V | None:
        if key in self._data:
            self._order = None
            del self._spreads[key]
        return self._data.pop(key, None)

    def keys(self) -> list[str]:
        if self._order is None:
            self._order = self._ordered()
        return list(self._order)

    def _ordered(self) -> list[str]:
        mask = self._capacity - 1
        spreads = self._spreads
        if self._flavor is Flavor.KAFKA_3:
            return sorted(self._data, key=lambda k: (spreads[k] & mask, spreads[k]))
        # sorted() is stable, so keys sharing a bucket keep their insertion order.
        return sorted(self._data, key=lambda k: spreads[k] & mask)

    def values(self) -> list[V]:
        return [self._data[k] for k in self.keys()]

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def first_key(self) -> str | None:
        keys = self.keys()
        return keys[0] if keys else None


def java_hashmap_order(keys_in_insertion_order: Iterable[str]) -> list[str]:
    """Iteration order of a fresh ``java.util.HashMap`` filled in the given order."""
    keys = list(dict.fromkeys(keys_in_insertion_order))
    mask = java_capacity_after(len(keys)) - 1
    return sorted(keys, key=lambda k: spread(k) & mask)


def _improve(h: int) -> int:
    """Scala 2.13 ``Hashing.improve`` (all steps wrap at 32 bits)."""
    h1 = (h + ~(h << 9)) & 0xFFFFFFFF
    h2 = h1 ^ (h1 >> 14)
    h3 = (h2 + (h2 << 4)) & 0xFFFFFFFF
    return h3 ^ (h3 >> 10)


def champ_order(keys: Iterable[str]) -> list[str]:
    """Iteration order of a Scala 2.13 ``immutable.HashMap`` (CHAMP trie) holding ``keys``.

    At each level the 5-bit slot ``(improve(h) >>> 5L) & 31`` decides: keys alone in
    their slot come first (slot ascending), then the shared slots' sub-nodes (slot
    ascending), recursively. Full 32-bit collisions keep their given order.
    """
    return _champ_level(list(dict.fromkeys(keys)), 0)


def _champ_level(keys: list[str], level: int) -> list[str]:
    if len(keys) <= 1 or level * 5 >= 32:
        return keys
    slots: dict[int, list[str]] = {}
    for key in keys:
        slot = (_improve(java_string_hash(key) & 0xFFFFFFFF) >> (5 * level)) & 31
        slots.setdefault(slot, []).append(key)
    alone = [group[0] for slot, group in sorted(slots.items()) if len(group) == 1]
    nested: list[str] = []
    for _slot, group in sorted(slots.items()):
        if len(group) > 1:
            nested.extend(_champ_level(group, level + 1))
    return alone + nested


def first_max(ordered_names: list[str], count: Callable[[str], int]) -> str | None:
    """The first name with the highest count: both ``Stream.max`` and Scala ``maxBy`` keep the earlier."""
    best: str | None = None
    for name in ordered_names:
        if best is None or count(name) > count(best):
            best = name
    return best
