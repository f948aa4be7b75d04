"""The Java orders Kafka 4.4.0's server-side assignors depend on.

* ``org.apache.kafka.common.Uuid``: ``hashCode`` (xor of the two halves folded to 32 bits), ``compareTo``
  (signed most significant long, then signed least significant long) and ``toString`` (URL-safe base64,
  no padding), which appears in the uniform assignor's error message.
* The member order: ``TargetAssignmentBuilder.build`` puts the members into a fresh ``HashMap<String, ...>``
  (``memberSpecs``) in the iteration order of ``UpdatedMembersAndTargetAssignmentView.members()``, an
  ``OverlayMap`` over the group's ``TimelineHashMap`` of members: the group's members in timeline order
  (a replaced member keeps its place, a removed one is skipped), then the added ones in ``HashMap`` order.
  :func:`member_spec_order` gives the ``HashMap`` order; :class:`TimelineKeyOrder` keeps the group's order.
* ``TimelineHashMap`` (``org.apache.kafka.timeline.BaseHashTable``) is not ``java.util.HashMap``: slots
  are picked by a Fibonacci hash (the top bits of ``hashCode * 0x9E3779B97F4A7C15``), colliding keys share
  an array in insertion order, and the iterator walks the slots upwards but each slot's array backwards.
* A subscription's topic order: ``ConsumerGroupMember`` keeps its names in ``new HashSet<>(list)`` of the
  request's list; ``TopicIds`` iterates those names and maps them to ids, dropping unknown names.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterable, Iterator, Sequence

from rebalance_lab.clients.assignors.java_hashmap import (
    JavaHashMap,
    string_hash,
    string_hash_order,
    to_int32,
)

Slots = tuple[tuple[str, ...], ...]  # a TimelineKeyOrder's slot arrays, as stored in a group snapshot
_MASK64 = (1 << 64) - 1
_FIBONACCI = 0x9E3779B97F4A7C15  # BaseHashTable.findSlot's multiplier (-7046029254386353131 as a long)


def _signed64(value: int) -> int:
    return value - (1 << 64) if value & (1 << 63) else value


def uuid_hash(topic_id: uuid.UUID) -> int:
    """``Uuid.hashCode``: x = msb ^ lsb; (int)(x >> 32) ^ (int)x."""
    value = topic_id.int
    folded = (value >> 64) ^ (value & _MASK64)
    return to_int32((folded >> 32) ^ folded)


def uuid_sort_key(topic_id: uuid.UUID) -> tuple[int, int]:
    """``Uuid.compareTo`` as a sort key: both halves compared as signed longs."""
    value = topic_id.int
    return _signed64(value >> 64), _signed64(value & _MASK64)


def uuid_string(topic_id: uuid.UUID) -> str:
    """``Uuid.toString``: URL-safe base64 of the 16 bytes without padding."""
    return base64.urlsafe_b64encode(topic_id.bytes).rstrip(b"=").decode("ascii")


def int_hash(value: int) -> int:
    """``Integer.hashCode``."""
    return value


def collection_capacity(size: int) -> int:
    """``new HashSet<>(collection)``: ``new HashMap<>(max((int) (size / .75f) + 1, 16))``."""
    return max(int(size / 0.75) + 1, 16)


def presized_capacity(expected: int) -> int:
    """``(int) ((float) expected / 0.75F + 1.0F)``, the assignors' presizing of maps and sets."""
    return int(expected / 0.75 + 1.0)


def member_spec_order(overlay_order: Iterable[str]) -> list[str]:
    """Iteration order of ``memberSpecs`` (a default ``HashMap``) after putting the members in
    ``overlay_order``, the order ``UpdatedMembersAndTargetAssignmentView.members()`` iterates them."""
    return string_hash_order(overlay_order)


def overlay_order(group_order: Iterable[str], removed: Iterable[str], added: Iterable[str]) -> list[str]:
    """``OverlayMap`` iteration: the base map's keys minus removals, then the additions (a ``HashMap``)."""
    gone = set(removed)
    kept = [member_id for member_id in group_order if member_id not in gone]
    present = set(kept)
    return kept + string_hash_order(member_id for member_id in added if member_id not in present)


def subscription_name_order(names: Sequence[str], regex_topics: Sequence[str] = ()) -> tuple[str, ...]:
    """The names a member's ``TopicIds`` iterates, given its request's ``SubscribedTopicNames`` list (Java
    keeps ``new HashSet<>(list)``) and the topics its regex resolved to (``UnionSet`` over both sets: the
    larger first, ties to the regex's, then the other's names the larger lacks)."""
    by_name = _hash_set_order(names)
    if not regex_topics:
        return by_name
    by_regex = _hash_set_order(regex_topics)
    if not by_name:
        return by_regex
    large, small = (by_name, by_regex) if len(by_name) > len(by_regex) else (by_regex, by_name)
    seen = set(large)
    return large + tuple(name for name in small if name not in seen)


def _hash_set_order(values: Sequence[str]) -> tuple[str, ...]:
    table: JavaHashMap[str, None] = JavaHashMap(string_hash, collection_capacity(len(values)))
    for value in values:
        table.put(value, None)
    return tuple(table.keys())


class TimelineKeyOrder:
    """The key order of a ``TimelineHashMap`` (``BaseHashTable``) after puts and removes: the group's
    member map, whose order becomes the put order of ``memberSpecs``. Replacing a key keeps its place."""

    def __init__(self, keys: Iterable[str] = ()) -> None:
        self._slots: list[list[str]] = [[], []]  # TimelineHashMap(registry, 0): BaseHashTable capacity 2
        self._keys: set[str] = set()
        for key in keys:
            self.put(key)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        for slot in self._slots:
            yield from reversed(slot)  # CurrentIterator pops each slot's array from its end

    @classmethod
    def restored(cls, slots: Slots) -> TimelineKeyOrder:
        """The order :meth:`slots` saved, capacity included (so later puts land where they would have)."""
        order = cls()
        order._slots = [list(slot) for slot in slots]
        order._keys = {key for slot in slots for key in slot}
        return order

    def slots(self) -> Slots:
        return tuple(tuple(slot) for slot in self._slots)

    def put(self, key: str) -> None:
        if key in self._keys:
            return
        if (len(self._keys) + 1) * 0.75 > len(self._slots):
            self._rehash(len(self._slots) * 2)
        self._slots[_find_slot(key, len(self._slots))].append(key)
        self._keys.add(key)

    def remove(self, key: str) -> None:
        if key in self._keys:
            self._slots[_find_slot(key, len(self._slots))].remove(key)
            self._keys.discard(key)

    def _rehash(self, capacity: int) -> None:
        old = self._slots
        self._slots = [[] for _ in range(capacity)]
        for slot in old:
            for key in slot:  # unpackSlot keeps the array order when rehashing
                self._slots[_find_slot(key, capacity)].append(key)


def _find_slot(key: str, capacity: int) -> int:
    """``BaseHashTable.findSlot``: the top log2(capacity) bits of the 64-bit product."""
    shift = 65 - capacity.bit_length()
    return ((string_hash(key) * _FIBONACCI) & _MASK64) >> shift
