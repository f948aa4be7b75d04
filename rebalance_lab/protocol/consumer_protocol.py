"""The embedded ``consumer`` protocol: JoinGroup subscription and SyncGroup assignment bytes.

Byte-identical to Java's ``ConsumerProtocol`` (``ConsumerProtocolSubscription.json`` and
``ConsumerProtocolAssignment.json``, versions 0-3, non-flexible), plus the assignors' own
user data (``StickyAssignor`` V0/V1, ``CooperativeStickyAssignor``). Spec: assignors.md §1.

Hand-written with ``struct`` on purpose: the format is tiny, non-flexible and must follow
Java's writer rules (sorting, grouping) that a schema-generated codec would not apply.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rebalance_lab.protocol.assignment_types import Assignment, Subscription, TopicPartition
from rebalance_lab.protocol.java_hashmap import JavaHashMap, java_str_key, string_hash

__all__ = [
    "HIGHEST_VERSION",
    "PROTOCOL_TYPE",
    "ConsumerProtocolError",
    "StickyMemberData",
    "decode_assignment",
    "decode_cooperative_user_data",
    "decode_sticky_user_data",
    "decode_subscription",
    "encode_assignment",
    "encode_cooperative_user_data",
    "encode_sticky_user_data",
    "encode_subscription",
]

PROTOCOL_TYPE = "consumer"  # ConsumerProtocol.PROTOCOL_TYPE
HIGHEST_VERSION = 3  # both schemas have "validVersions": "0-3"
_MAX_STRING = 0x7FFF


class ConsumerProtocolError(ValueError):
    """Malformed consumer-protocol bytes (Java: ``SchemaException`` or the generated readers'
    ``RuntimeException``), or a value the writer cannot encode."""


# ---------------------------------------------------------------- primitive writer


class _Writer:
    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def int16(self, v: int) -> None:
        self._parts.append(struct.pack(">h", v))

    def int32(self, v: int) -> None:
        self._parts.append(struct.pack(">i", v))

    def string(self, s: str | None) -> None:
        if s is None:
            self.int16(-1)
            return
        raw = s.encode("utf-8")
        if len(raw) > _MAX_STRING:
            raise ConsumerProtocolError(f"string of {len(raw)} UTF-8 bytes exceeds {_MAX_STRING}")
        self.int16(len(raw))
        self._parts.append(raw)

    def nullable_bytes(self, b: bytes | None) -> None:
        if b is None:
            self.int32(-1)
            return
        self.int32(len(b))
        self._parts.append(bytes(b))

    def int32_array(self, values: Sequence[int]) -> None:
        self.int32(len(values))
        self._parts.append(struct.pack(f">{len(values)}i", *values))

    def topic_partitions(self, groups: Sequence[tuple[str, list[int]]]) -> None:
        self.int32(len(groups))
        for topic, partitions in groups:
            self.string(topic)
            self.int32_array(partitions)

    def getvalue(self) -> bytes:
        return b"".join(self._parts)


# ---------------------------------------------------------------- primitive reader


class _Reader:
    def __init__(self, data: bytes) -> None:
        self._data = memoryview(bytes(data))
        self._pos = 0

    def remaining(self) -> int:
        return len(self._data) - self._pos

    def _take(self, n: int) -> bytes:
        if n > self.remaining():
            raise ConsumerProtocolError(f"buffer underflow: need {n} bytes, {self.remaining()} left")
        chunk = bytes(self._data[self._pos : self._pos + n])
        self._pos += n
        return chunk

    def int16(self) -> int:
        value: int = struct.unpack(">h", self._take(2))[0]
        return value

    def int32(self) -> int:
        value: int = struct.unpack(">i", self._take(4))[0]
        return value

    def string(self, nullable: bool = False) -> str | None:
        length = self.int16()
        if length < 0:
            if nullable:
                return None
            raise ConsumerProtocolError("non-nullable string was serialized as null")
        # Readers also reject > 0x7fff; an int16 cannot exceed it, so underflow is the only case.
        # Java builds the String with new String(bytes, UTF_8): malformed input becomes U+FFFD.
        return self._take(length).decode("utf-8", errors="replace")

    def required_string(self) -> str:
        value = self.string()
        assert value is not None
        return value

    def nullable_bytes(self) -> bytes | None:
        length = self.int32()
        return None if length < 0 else self._take(length)

    def array_length(self) -> int:
        count = self.int32()
        if count < 0:
            raise ConsumerProtocolError("non-nullable array was serialized as null")
        # Java's generated readers refuse a count larger than the remaining byte count.
        if count > self.remaining():
            raise ConsumerProtocolError(f"array of {count} elements but only {self.remaining()} bytes left")
        return count

    def int32_array(self) -> list[int]:
        return [self.int32() for _ in range(self.array_length())]

    def topic_partitions(self) -> list[TopicPartition]:
        out: list[TopicPartition] = []
        for _ in range(self.array_length()):
            topic = self.required_string()
            out.extend(TopicPartition(topic, p) for p in self.int32_array())
        return out


# ---------------------------------------------------------------- versions


def _writer_version(version: int) -> int:
    """``checkSubscriptionVersion``: negative is an error, above 3 is clamped to 3."""
    if version < 0:
        raise ConsumerProtocolError(f"unsupported consumer protocol version {version}")
    return min(version, HIGHEST_VERSION)


def _read_version(reader: _Reader) -> int:
    """Header int16; a newer version parses as v3 ("append only, never reorder")."""
    return _writer_version(reader.int16())


# ---------------------------------------------------------------- subscription


def _group_sorted(partitions: Iterable[TopicPartition]) -> list[tuple[str, list[int]]]:
    """Owned partitions sorted by (topic, partition), consecutive runs of a topic grouped
    (``serializeSubscription``, KAFKA-12898)."""
    groups: list[tuple[str, list[int]]] = []
    for tp in sorted(partitions, key=lambda tp: (java_str_key(tp.topic), tp.partition)):
        if not groups or groups[-1][0] != tp.topic:
            groups.append((tp.topic, []))
        groups[-1][1].append(tp.partition)
    return groups


def encode_subscription(subscription: Subscription, version: int = HIGHEST_VERSION) -> bytes:
    """``ConsumerProtocol.serializeSubscription``: version-prefixed, topics sorted, fields the
    version lacks silently dropped (they are all "ignorable")."""
    version = _writer_version(version)
    w = _Writer()
    w.int16(version)
    topics = sorted(subscription.topics, key=java_str_key)
    w.int32(len(topics))
    for topic in topics:
        w.string(topic)
    w.nullable_bytes(subscription.user_data)
    if version >= 1:
        w.topic_partitions(_group_sorted(subscription.owned_partitions))
    if version >= 2:
        generation = subscription.generation_id
        w.int32(-1 if generation is None else generation)
    if version >= 3:
        w.string(subscription.rack_id)
    return w.getvalue()


def decode_subscription(data: bytes, version: int | None = None) -> Subscription:
    """``ConsumerProtocol.deserializeSubscription``. ``version`` forces the body version
    (Java's two-argument overload reads the header, then parses as the given version)."""
    reader = _Reader(data)
    header = _read_version(reader)
    body_version = header if version is None else _writer_version(version)
    topics = tuple(reader.required_string() for _ in range(reader.array_length()))
    user_data = reader.nullable_bytes()
    owned = reader.topic_partitions() if body_version >= 1 else []
    generation = reader.int32() if body_version >= 2 else -1
    rack = reader.string(nullable=True) if body_version >= 3 else None
    # Trailing bytes are ignored. Java turns generation < 0 and a null/empty rack into Optional.empty().
    return Subscription(
        topics=topics,
        user_data=user_data,
        owned_partitions=tuple(owned),
        generation_id=generation if generation >= 0 else None,
        rack_id=rack or None,
    )


# ---------------------------------------------------------------- assignment


def _group_first_appearance(partitions: Iterable[TopicPartition]) -> list[tuple[str, list[int]]]:
    """``serializeAssignment``: ``assignedPartitions().find(topic)`` groups by first appearance
    of each topic, partitions in list order (not sorted)."""
    groups: dict[str, list[int]] = {}
    for tp in partitions:
        groups.setdefault(tp.topic, []).append(tp.partition)
    return list(groups.items())


def encode_assignment(assignment: Assignment, version: int = HIGHEST_VERSION) -> bytes:
    """``ConsumerProtocol.serializeAssignment``; the body is the same in v0..v3."""
    w = _Writer()
    w.int16(_writer_version(version))
    w.topic_partitions(_group_first_appearance(assignment.partitions))
    w.nullable_bytes(assignment.user_data)
    return w.getvalue()


def decode_assignment(data: bytes) -> Assignment:
    """``ConsumerProtocol.deserializeAssignment``; newer versions parse as v3, trailing bytes ignored."""
    reader = _Reader(data)
    _read_version(reader)
    partitions = reader.topic_partitions()
    user_data = reader.nullable_bytes()
    return Assignment(partitions=tuple(partitions), user_data=user_data)


# ---------------------------------------------------------------- assignor user data


@dataclass(frozen=True)
class StickyMemberData:
    """What an assignor reads from one member (Java ``AbstractStickyAssignor.MemberData``).

    ``generation`` is ``None`` where Java's ``Optional`` is empty.
    """

    partitions: tuple[TopicPartition, ...]
    generation: int | None


def encode_sticky_user_data(partitions: Sequence[TopicPartition], generation: int | None) -> bytes:
    """``StickyAssignor.serializeTopicPartitionAssignment`` (bare struct, no version prefix).

    Topics are grouped through ``CollectionUtils.groupPartitionsByTopic`` -- a Java
    ``HashMap`` filled by ``computeIfAbsent`` -- so the topic order on the wire is Java
    ``HashMap`` order; partitions keep the member's list order.
    """
    grouped: JavaHashMap[str, list[int]] = JavaHashMap(string_hash)
    for tp in partitions:
        grouped.compute_if_absent(tp.topic, lambda _t: []).append(tp.partition)
    w = _Writer()
    w.topic_partitions(list(grouped.items()))
    if generation is not None:
        w.int32(generation)
    return w.getvalue()


def _read_sticky(data: bytes, with_generation: bool) -> StickyMemberData:
    reader = _Reader(data)
    partitions = reader.topic_partitions()
    generation = reader.int32() if with_generation else None
    return StickyMemberData(tuple(partitions), generation)


def decode_sticky_user_data(data: bytes | None) -> StickyMemberData:
    """``StickyAssignor.memberData``: null/empty -> nothing, no generation; else V1, falling back
    to V0 (generation absent); if both fail -> nothing with generation -1 *present*."""
    if not data:
        return StickyMemberData((), None)
    try:
        return _read_sticky(data, with_generation=True)
    except ConsumerProtocolError:
        pass
    try:
        return _read_sticky(data, with_generation=False)
    except ConsumerProtocolError:
        return StickyMemberData((), -1)


_INT32 = struct.Struct(">i")


def encode_cooperative_user_data(generation: int) -> bytes:
    """``CooperativeStickyAssignor.subscriptionUserData``: a bare int32 generation (-1 before
    the first assignment)."""
    return _INT32.pack(generation)


def decode_cooperative_user_data(data: bytes | None) -> int | None:
    """Generation from cooperative user data: null -> absent; unparsable (e.g. the empty
    buffer non-Java clients send) -> -1 present. Trailing bytes are ignored."""
    if data is None:
        return None
    if len(data) < 4:
        return -1
    value: int = _INT32.unpack_from(data)[0]
    return value
