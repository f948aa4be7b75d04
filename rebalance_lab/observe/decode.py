"""Decode consumer-protocol bytes inside records into the event schema's structures.

Groups whose protocol type is not ``consumer`` (Connect, custom) carry opaque
bytes; those decode to ``None`` and the raw bytes stay out of the event.
"""

from __future__ import annotations

from typing import Any

from rebalance_lab.protocol.consumer_protocol import (
    ConsumerProtocolError,
    decode_assignment,
    decode_subscription,
)


def tps(partitions: Any) -> list[dict[str, Any]]:
    return [{"topic": tp.topic, "partition": tp.partition} for tp in partitions]


def subscription(metadata: bytes, protocol_type: str | None) -> dict[str, Any] | None:
    if protocol_type != "consumer" or not metadata:
        return None
    try:
        sub = decode_subscription(metadata)
    except ConsumerProtocolError:
        return None
    return {
        "topics": list(sub.topics),
        "owned": tps(sub.owned_partitions),
        "generation": -1 if sub.generation_id is None else sub.generation_id,
        "rack": sub.rack_id,
    }


def assignment(data: bytes, protocol_type: str | None) -> list[dict[str, Any]] | None:
    if protocol_type != "consumer":
        return None
    if not data:
        return []
    try:
        return tps(decode_assignment(data).partitions)
    except ConsumerProtocolError:
        return None
