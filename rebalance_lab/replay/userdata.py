"""Sticky assignor user data for the what-if, byte-identical to
:func:`rebalance_lab.protocol.consumer_protocol.encode_sticky_user_data` and faster.

The what-if writes one per member per round. The reference writer groups partitions through a
Java ``HashMap`` with one ``computeIfAbsent`` per partition; only the insertions of new topics
shape that map, and with at most 12 distinct topics it never resizes (a ``computeIfAbsent``
resizes only when ``size > 0.75 * 16`` at its start), so the topic order is that of the
distinct topics inserted once each. More topics take the reference writer.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from functools import lru_cache

from rebalance_lab.clients.assignors.java_hashmap import JavaHashMap, string_hash
from rebalance_lab.clients.assignors.types import TopicPartition
from rebalance_lab.protocol.consumer_protocol import encode_sticky_user_data

_NO_RESIZE_TOPICS = 12
_SAFE_TOPIC_CHARS = 0x7FFF // 4  # longer names may exceed Java's int16 string length in UTF-8
_INT32 = struct.Struct(">i")


@lru_cache(maxsize=4096)
def _topic_order(topics: tuple[str, ...]) -> tuple[str, ...]:
    grouped: JavaHashMap[str, None] = JavaHashMap(string_hash)
    for topic in topics:
        grouped.compute_if_absent(topic, lambda _t: None)
    return tuple(grouped.keys())


@lru_cache(maxsize=4096)
def _topic_bytes(topic: str) -> bytes:
    raw = topic.encode("utf-8")
    return struct.pack(">h", len(raw)) + raw


def sticky_user_data(partitions: Sequence[TopicPartition], generation: int | None) -> bytes:
    """``StickyAssignor.serializeTopicPartitionAssignment`` (V1 with a generation, V0 without)."""
    groups: dict[str, list[int]] = {}
    for topic, partition in partitions:
        ids = groups.get(topic)
        if ids is None:
            groups[topic] = [partition]
        else:
            ids.append(partition)
    if len(groups) > _NO_RESIZE_TOPICS or any(len(t) > _SAFE_TOPIC_CHARS for t in groups):
        return encode_sticky_user_data(partitions, generation)  # long names: let the reference writer check
    order = tuple(groups) if len(groups) <= 1 else _topic_order(tuple(groups))
    parts = [_INT32.pack(len(order))]
    for topic in order:
        ids = groups[topic]
        parts.append(_topic_bytes(topic))
        parts.append(struct.pack(f">i{len(ids)}i", len(ids), *ids))
    if generation is not None:
        parts.append(_INT32.pack(generation))
    return b"".join(parts)
