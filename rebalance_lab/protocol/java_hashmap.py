"""Java ``HashMap``/``HashSet`` iteration order, ``String.hashCode`` and ``String`` ordering.

Kafka's assignors iterate several ``HashMap``s whose order changes results (spec
assignors.md §5.8): the leader's member map, the sticky user-data topic grouping, the
``PartitionMovements`` sets and ``partitionsPerTopic``. Python dicts keep insertion
order, which is not Java's, so this module replays ``java.util.HashMap``'s bucket
layout: power-of-two tables, ``hash ^ (hash >>> 16)`` spreading, chains kept in
insertion order (``put``) or head-first (``computeIfAbsent``), order-preserving
splits on resize, and a capacity that never shrinks.

Tree bins (a chain of 9 nodes in a table of 64 or more buckets) iterate in an order we
do not model; we refuse them with :class:`UnsupportedJavaOrder` instead of guessing.
"""

from __future__ import annotations

import sys
from array import array
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Iterator
from functools import lru_cache
from operator import mul
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:  # an annotation only: serve's start (security.listeners) imports this module without the
    from rebalance_lab.protocol.assignment_types import TopicPartition  # assignment types (issue 22)

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

_DEFAULT_CAPACITY = 16  # HashMap.DEFAULT_INITIAL_CAPACITY
_MAXIMUM_CAPACITY = 1 << 30
_TREEIFY_THRESHOLD = 8  # HashMap.TREEIFY_THRESHOLD
_MIN_TREEIFY_CAPACITY = 64  # HashMap.MIN_TREEIFY_CAPACITY


class UnsupportedJavaOrder(RuntimeError):
    """A key set that would make Java build a tree bin, whose order we do not emulate."""


def to_int32(value: int) -> int:
    """Wrap an integer to Java's signed 32-bit ``int``."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


@lru_cache(maxsize=65536)
def string_hash(s: str) -> int:
    """``String.hashCode``: s[0]*31^(n-1) + ... over UTF-16 code units, 32-bit wrap.

    Computed as one sum of products with the powers of 31 (mod 2^32, which the final wrap
    makes exact), the last unit times 31^0: no Python loop per unit. Member ids are mostly
    new (a rejoin brings a new id), so this runs on a cache miss in most assignments.
    """
    units = _code_units(s)
    powers = _POWERS_OF_31
    if len(units) > len(powers):
        _grow_powers(len(units))
    return to_int32(sum(map(mul, reversed(units), powers)))  # map stops at the shorter: len(units) terms


def _code_units(s: str) -> bytes | array[int]:
    """The UTF-16 code units of ``s`` as integers (ASCII: its bytes)."""
    if s.isascii():
        return s.encode("ascii")
    return array("H", s.encode(_UTF16_NATIVE))


_UTF16_NATIVE = "utf-16-le" if sys.byteorder == "little" else "utf-16-be"  # array("H") reads native order
_POWERS_OF_31: list[int] = [1]  # 31^i mod 2^32, i = 0, 1, ...


def _grow_powers(n: int) -> None:
    powers = _POWERS_OF_31
    while len(powers) < n:
        powers.append(powers[-1] * 31 & 0xFFFFFFFF)


def topic_partition_hash(tp: TopicPartition) -> int:
    """``TopicPartition.hashCode``: 31 * (31 + partition) + topic.hashCode()."""
    return to_int32(31 * (31 + tp.partition) + string_hash(tp.topic))


@lru_cache(maxsize=65536)
def java_str_key(s: str) -> bytes:
    """Sort key giving Java ``String.compareTo`` order (UTF-16 code units, spec §2.2).

    Python compares code points; the two orders differ only between a supplementary
    character and one in U+E000..U+FFFF. Big-endian UTF-16 bytes compare like the units.
    """
    return s.encode("utf-16-be")


def native_order_is_java(strings: Iterable[str]) -> bool:
    """True if Python's ``str`` order equals Java's ``String`` order on these strings: the two
    differ only when a comparison involves a character above U+D7FF, so none may have one."""
    return all(map(_below_surrogates, strings))


@lru_cache(maxsize=65536)
def _below_surrogates(s: str) -> bool:
    # Remembered per string: the same few topic names are checked in every assignment of a group.
    return max(s, default="") < "\ud800"


def table_size_for(cap: int) -> int:
    """``HashMap.tableSizeFor``: the smallest power of two >= cap (at least 1)."""
    n = 1
    while n < cap:
        n <<= 1
    return min(n, _MAXIMUM_CAPACITY)


def _spread(h: int) -> int:
    """``HashMap.hash``: h ^ (h >>> 16) on the unsigned 32-bit pattern."""
    u = h & 0xFFFFFFFF
    return u ^ (u >> 16)


class JavaHashMap(Generic[K, V]):
    """Insertion and iteration semantics of ``java.util.HashMap`` for one key type.

    ``hash_fn`` must be the key's Java ``hashCode``. Only the operations Kafka's
    assignors use are provided.
    """

    def __init__(self, hash_fn: Callable[[K], int], initial_capacity: int | None = None) -> None:
        self._hash_fn = hash_fn
        # Java allocates lazily; a sized constructor only remembers tableSizeFor(n).
        self._capacity = _DEFAULT_CAPACITY if initial_capacity is None else table_size_for(initial_capacity)
        # Chains hold keys only; values live in ``_index`` (replacing a value keeps its place).
        self._table: list[list[K]] | None = None
        self._index: dict[K, V] = {}

    def __len__(self) -> int:
        return len(self._index)

    def __contains__(self, key: object) -> bool:
        return key in self._index

    def get(self, key: K) -> V | None:
        return self._index.get(key)

    def __iter__(self) -> Iterator[K]:
        return self.keys()

    def keys(self) -> Iterator[K]:
        """Keys in Java iteration order (bucket 0..capacity-1, each chain in order)."""
        for chain in self._table or ():
            yield from chain

    def items(self) -> Iterator[tuple[K, V]]:
        index = self._index
        for chain in self._table or ():
            for key in chain:
                yield key, index[key]

    def first_key(self) -> K:
        """``keySet().iterator().next()``; raises ``StopIteration`` when empty."""
        return next(self.keys())

    def put(self, key: K, value: V) -> None:
        """``put``: replace in place, or append at the chain tail then maybe resize."""
        if key in self._index:
            self._index[key] = value
            return
        table = self._ensure_table()
        chain = table[self._bucket(key)]
        chain.append(key)
        self._index[key] = value
        if len(chain) > _TREEIFY_THRESHOLD:
            self._treeify_bin()
        if len(self._index) > self._threshold():
            self._resize()

    def compute_if_absent(self, key: K, factory: Callable[[K], V]) -> V:
        """``computeIfAbsent``: resize check first, new key at the chain *head*.

        Java checks ``size > threshold`` before looking the key up, so a call for a key already
        present still doubles a table that the previous insert left over its threshold.
        """
        if self._table is None or len(self._index) > self._threshold():
            self._table = self._table if self._table is not None else self._new_table()
            if len(self._index) > self._threshold():
                self._resize()
        if key in self._index:
            return self._index[key]
        assert self._table is not None
        chain = self._table[self._bucket(key)]
        value = factory(key)
        chain.insert(0, key)
        self._index[key] = value
        if len(chain) >= _TREEIFY_THRESHOLD:  # binCount >= TREEIFY_THRESHOLD - 1 before the insert
            self._treeify_bin()
        return value

    def remove(self, key: K) -> V | None:
        """``remove``: unlink from its chain; the capacity never shrinks."""
        if key not in self._index or self._table is None:
            return None
        chain = self._table[self._bucket(key)]
        chain.remove(key)
        return self._index.pop(key)

    def _threshold(self) -> int:
        return int(self._capacity * 0.75)

    def _bucket(self, key: K) -> int:
        return _spread(self._hash_fn(key)) & (self._capacity - 1)

    def _new_table(self) -> list[list[K]]:
        return [[] for _ in range(self._capacity)]

    def _ensure_table(self) -> list[list[K]]:
        if self._table is None:
            self._table = self._new_table()
        return self._table

    def _resize(self) -> None:
        """Double the table; each chain splits into lo/hi halves keeping relative order."""
        old = self._ensure_table()
        self._capacity *= 2
        table = self._new_table()
        for chain in old:
            for key in chain:
                table[self._bucket(key)].append(key)
        self._table = table

    def _treeify_bin(self) -> None:
        # HashMap.treeifyBin resizes instead while the table is small.
        if self._capacity < _MIN_TREEIFY_CAPACITY:
            self._resize()
            return
        raise UnsupportedJavaOrder("a Java HashMap bucket would become a tree bin; its order is not emulated")


def java_hash_order(keys: Iterable[K], hash_fn: Callable[[K], int]) -> list[K]:
    """Iteration order of a default ``HashMap``/``HashSet`` after ``put``-ing ``keys`` in order.

    Without removals the order follows from the final table alone: ``put`` appends to a
    chain and a resize splits chains keeping their order, so each bucket lists its keys in
    first-put order. That is a stable sort by final bucket, unless a chain ever got long
    enough for ``treeifyBin`` (which resizes early or builds a tree bin): then the map is
    replayed step by step.
    """
    distinct = list(dict.fromkeys(keys))  # a repeated put keeps the key's place
    return _hash_order(distinct, [_spread(hash_fn(key)) for key in distinct], hash_fn)


def _hash_order(distinct: list[K], hashes: list[int], hash_fn: Callable[[K], int]) -> list[K]:
    """:func:`java_hash_order` of distinct keys given their spread hashes."""
    n = len(distinct)
    capacity = _DEFAULT_CAPACITY
    while n > int(capacity * 0.75):  # resize once ++size > threshold
        capacity *= 2
    # A chain needs more than TREEIFY_THRESHOLD keys to treeify: fewer keys never replay.
    if n > _TREEIFY_THRESHOLD and (capacity > _MAXIMUM_CAPACITY or _may_treeify(hashes, capacity)):
        m: JavaHashMap[K, None] = JavaHashMap(hash_fn)
        for key in distinct:
            m.put(key, None)
        return list(m.keys())
    mask = capacity - 1
    buckets = [h & mask for h in hashes]
    return [distinct[i] for i in sorted(range(n), key=buckets.__getitem__)]


def _may_treeify(hashes: list[int], final_capacity: int) -> bool:
    """Whether some chain reaches ``TREEIFY_THRESHOLD + 1`` nodes at any table size on the
    way to ``final_capacity``. At capacity c the table holds the keys put before the resize
    to 2c, i.e. the first ``int(0.75 * c) + 1`` (chains only grow within one size)."""
    capacity = _DEFAULT_CAPACITY
    while capacity <= final_capacity:
        held = hashes[: int(capacity * 0.75) + 1]
        mask = capacity - 1
        if len(held) > _TREEIFY_THRESHOLD and max(Counter(h & mask for h in held).values()) > _TREEIFY_THRESHOLD:
            return True
        capacity *= 2
    return False


def string_hash_order(keys: Iterable[str]) -> list[str]:
    """:func:`java_hash_order` of strings, remembered: a group's member ids and topics repeat from one
    generation to the next, and the replay's what-if orders them in every assignor run."""
    puts = tuple(keys)
    found = _orders.get(puts)
    if found is None:
        if len(_orders) >= _ORDERS_REMEMBERED:
            _orders.clear()
        distinct = list(dict.fromkeys(puts))
        found = _orders[puts] = tuple(_hash_order(distinct, list(map(_spread_string_hash, distinct)), string_hash))
        if len(found) <= _TREEIFY_THRESHOLD:
            # Too few keys to ever treeify: the order is a stable sort by bucket, so putting the keys in
            # that order gives that order again (the sticky assignors re-order the ordered member ids).
            _orders[found] = found
    return list(found)


_ORDERS_REMEMBERED = 8192
_orders: dict[tuple[str, ...], tuple[str, ...]] = {}


@lru_cache(maxsize=65536)
def _spread_string_hash(s: str) -> int:
    return _spread(string_hash(s))
