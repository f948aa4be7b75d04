"""``java.util.HashSet<Integer>`` iteration order, without building Java's table.

A ``HashSet`` that only ever appends to its chains (``add`` puts at the tail, ``remove`` unlinks, a
resize splits chains keeping their order) iterates its elements sorted by bucket at the current
capacity, ties in insertion order. So we keep the surviving elements in insertion order and the
capacity, and sort when asked: no table of empty lists per member set (a group of 5,000 members
has 5,000 of these).

Tree bins are the exception: a chain of more than 8 elements turns into a tree once the table has 64
buckets, and a tree iterates in another order. That needs 9 partitions of one member congruent modulo
the capacity (a topic of 500+ partitions); we then keep the bucket order, which may differ from Java's.
Below 64 buckets Java resizes instead, and so do we.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator

from rebalance_lab.clients.assignors.java_hashmap import table_size_for

_DEFAULT_CAPACITY = 16
_TREEIFY_THRESHOLD = 8
_MIN_TREEIFY_CAPACITY = 64


def _bucket(value: int, mask: int) -> int:
    return (value ^ (value >> 16)) & mask  # HashMap.hash of a non-negative Integer


class IntHashSet:
    """The iteration order of ``new HashSet<>(initialCapacity)`` (``None``: ``new HashSet<>()``)."""

    __slots__ = ("_capacity", "_counts", "_items")

    def __init__(self, initial_capacity: int | None = None, values: Iterable[int] = ()) -> None:
        self._capacity = _DEFAULT_CAPACITY if initial_capacity is None else table_size_for(initial_capacity)
        self._items: dict[int, None] = {}
        self._counts: Counter[int] | None = None  # bucket sizes, kept once a chain could outgrow 8
        for value in values:
            self.add(value)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, value: object) -> bool:
        return value in self._items

    def __iter__(self) -> Iterator[int]:
        return iter(self.keys())

    def keys(self) -> list[int]:
        """Elements in Java iteration order."""
        if len(self._items) < 2:
            return list(self._items)
        mask = self._capacity - 1
        return sorted(self._items, key=lambda value: _bucket(value, mask))

    def add(self, value: int) -> None:
        """``HashMap.putVal``: append, resize instead of treeifying a long chain while small, then grow."""
        if value in self._items:
            return
        self._items[value] = None
        if len(self._items) > _TREEIFY_THRESHOLD and self._capacity < _MIN_TREEIFY_CAPACITY:
            self._count(value)
        if len(self._items) > int(self._capacity * 0.75):
            self._resize()

    def _count(self, value: int) -> None:
        """``treeifyBin`` resizes a table under 64 buckets when a chain passes 8 nodes."""
        mask = self._capacity - 1
        if self._counts is None:
            self._counts = Counter(_bucket(v, mask) for v in self._items)
        else:
            self._counts[_bucket(value, mask)] += 1
        if self._counts[_bucket(value, mask)] > _TREEIFY_THRESHOLD:
            self._resize()

    def remove(self, value: int) -> None:
        if value in self._items:
            del self._items[value]
            if self._counts is not None:
                self._counts[_bucket(value, self._capacity - 1)] -= 1

    def _resize(self) -> None:
        self._capacity *= 2
        self._counts = None  # recounted at the next add that needs it
