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

from bisect import bisect_left, bisect_right
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
    """A ``str``-keyed map iterated in the order of the flavor's real member map (§7.3).

    The iteration order is kept as the map changes, as the real map's buckets are: a new key goes in at
    its place (a binary search on its bucket, and on its hash for Scala), a removed key comes out of its
    bucket, and only a capacity doubling re-sorts (amortised O(1) per insert, as a HashMap resize is).
    So no put or pop costs work that grows with the map beyond a C ``memmove``, and the first key is at hand.
    """

    def __init__(self, flavor: Flavor) -> None:
        self._scala = flavor is Flavor.KAFKA_3
        self._data: dict[str, V] = {}  # Python keeps insertion order, which Java's buckets keep
        self._capacity = _INITIAL_CAPACITY
        self._spreads: dict[str, int] = {}  # each key's hash, computed once
        self._order: list[str] = []  # the keys in iteration order, kept up to date

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __len__(self) -> int:
        return len(self._data)

    def __getitem__(self, key: str) -> V:
        return self._data[key]

    def get(self, key: str) -> V | None:
        return self._data.get(key)

    def put(self, key: str, value: V) -> None:
        if key in self._data:  # an existing key keeps its place in its bucket
            self._data[key] = value
            return
        size = len(self._data)
        capacity = (scala_capacity_before_insert(size, self._capacity) if self._scala
                    else java_capacity_after(size + 1, self._capacity))
        self._spreads[key] = spread(key)
        self._data[key] = value
        if capacity != self._capacity:
            self._capacity = capacity
            self._order = self._sorted()  # the resize re-buckets every key
        else:  # after the keys of its bucket (Java: they came earlier; Scala: their hashes are lower or equal)
            self._order.insert(bisect_right(self._order, self._place(key), key=self._place), key)

    def pop(self, key: str) -> V | None:
        if key not in self._data:
            return None
        order, place = self._order, self._place(key)
        index = bisect_left(order, place, key=self._place)
        while order[index] != key:  # the few keys sharing its bucket (and, for Scala, its hash)
            index += 1
        del order[index]
        del self._spreads[key]
        return self._data.pop(key)

    def _place(self, key: str) -> tuple[int, int]:
        """Where a key sorts: its bucket, then (Scala 2.13 only) its signed spread hash."""
        value = self._spreads[key]
        return (value & (self._capacity - 1), value if self._scala else 0)

    def _sorted(self) -> list[str]:
        # sorted() is stable, so keys sharing a bucket (Java) or a hash (Scala) keep their insertion order.
        return sorted(self._data, key=self._place)

    def keys(self) -> list[str]:
        return list(self._order)

    def values(self) -> list[V]:
        data = self._data
        return [data[k] for k in self._order]

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def first_key(self) -> str | None:
        return self._order[0] if self._order else None

    def check_order(self) -> None:
        """Raise when the kept order differs from sorting the map afresh (the tests call this after every step)."""
        if self._order != self._sorted():
            raise AssertionError(f"kept member order {self._order} != sorted {self._sorted()}")


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
