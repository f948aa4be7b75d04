"""A fast path for ConsumerGroupHeartbeat (68) v0-1: request decode and response encode.

Every KIP-848 member sends one heartbeat per interval, so at thousands of members this API is
most of the emulator's traffic; kafka-python's generic codec (the runtime codec before issue 21)
spent ~90 us per round trip on it (decode 36, response objects 14, encode 41), more than the group
coordinator itself; this path
takes ~5 (a plain v1 heartbeat: decode 3.2, response 0.5, encode 1.3). This module reads
and writes exactly the bytes of ``schemas/ConsumerGroupHeartbeat{Request,Response}.json`` (both
versions flexible: compact strings and arrays, tagged fields) with ``struct``, and is checked
byte for byte against the generic codec and kio by ``tests/unit/protocol/test_heartbeat_codec.py``
(Hypothesis), which also pins the schema fields it was written for.

Only the common shape is decoded here: anything unusual (a null where the schema forbids one,
tagged fields, invalid UTF-8, trailing or missing bytes) makes :func:`decode_request` return
None and the caller uses the generic codec, so malformed input gets exactly the generic
codec's verdict (``MalformedRequest``) and unknown tags are skipped as it skips them.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass, field

from rebalance_lab.protocol.fast_reader import FastReader, Unusual
from rebalance_lab.protocol.wire_primitives import request_header, uvarint

API_KEY = 68
VERSIONS = (0, 1)

_I32 = struct.Struct(">i")
_RESPONSE_HEAD = struct.Struct(">iibih")  # size, correlation id, header tags, throttle, error code
_EPOCH_INTERVAL = struct.Struct(">ii")
# What follows the epoch in a plain heartbeat: instance and rack id null, rebalance timeout -1, names null,
# (v1: regex null,) assignor null, owned partitions null, no tagged fields.
_PLAIN_TAIL = {0: b"\x00\x00\xff\xff\xff\xff\x00\x00\x00\x00", 1: b"\x00\x00\xff\xff\xff\xff\x00\x00\x00\x00\x00"}


@dataclass(slots=True)
class TopicPartitions:
    """One ``TopicPartitions`` entry (the request's owned partitions, the response's assignment)."""

    topic_id: uuid.UUID
    partitions: list[int]


@dataclass(slots=True)
class HeartbeatRequest:
    """The request body, with the generic codec's field names (handlers and faults read these)."""

    version: int
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: list[str] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    topic_partitions: list[TopicPartitions] | None = None


@dataclass(slots=True)
class Assignment:
    topic_partitions: list[TopicPartitions] = field(default_factory=list)


@dataclass(slots=True)
class HeartbeatResponse:
    """The response body; mutable like the generic one (the fault controller sets ``throttle_time_ms``)."""

    version: int
    throttle_time_ms: int = 0
    error_code: int = 0
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None


class _Reader(FastReader):
    """The compact form throughout, and the two fields only ConsumerGroupHeartbeat has."""

    __slots__ = ()

    def strings(self) -> list[str] | None:
        count = self.uvarint() - 1
        return None if count < 0 else [self.string() for _ in range(count)]

    def topic_partitions(self) -> list[TopicPartitions] | None:
        count = self.uvarint() - 1
        if count < 0:
            return None
        topics = []
        for _ in range(count):
            start = self.pos
            if start + 16 > len(self.data):
                raise Unusual("uuid past the end")
            topic_id = uuid.UUID(bytes=self.data[start : start + 16])
            self.pos = start + 16
            size = self.uvarint() - 1
            if size < 0:
                raise Unusual("null partitions")
            end = self.pos + 4 * size
            if end > len(self.data):
                raise Unusual("partitions past the end")
            partitions = list(struct.unpack_from(f">{size}i", self.data, self.pos))
            self.pos = end
            self.no_tags()
            topics.append(TopicPartitions(topic_id, partitions))
        return topics


def decode_request(payload: bytes) -> tuple[int, str, HeartbeatRequest] | None:
    """(correlation id, client id, body) of a v0-1 request with header v2, or None for the generic codec."""
    try:
        return _decode(payload)
    except (Unusual, IndexError, struct.error, UnicodeDecodeError):
        return None


def _decode(payload: bytes) -> tuple[int, str, HeartbeatRequest] | None:
    header = request_header(payload, API_KEY, VERSIONS)
    if header is None:
        return None
    version, correlation_id, client_id, pos = header
    if payload[pos] != 0:
        return None  # header tagged fields
    body = pos + 1
    # A plain heartbeat (two short ids, the epoch, every other field null or -1) is read inline.
    size = payload[body] - 1
    if 0 <= size < 0x7F:
        member_at = body + 1 + size
        member_size = payload[member_at] - 1
        if 0 <= member_size < 0x7F:
            epoch_at = member_at + 1 + member_size
            if payload[epoch_at + 4 :] == _PLAIN_TAIL[version]:
                group_id = payload[body + 1 : member_at].decode("utf-8")
                member_id = payload[member_at + 1 : epoch_at].decode("utf-8")
                (epoch,) = _I32.unpack_from(payload, epoch_at)
                return correlation_id, client_id, HeartbeatRequest(version, group_id, member_id, epoch)
    return _decode_rest(payload, correlation_id, client_id, version, body)


def _decode_rest(payload: bytes, correlation_id: int, client_id: str, version: int,
                 pos: int) -> tuple[int, str, HeartbeatRequest] | None:
    """The general body reader, from the group id on."""
    r = _Reader(payload, pos)
    body = HeartbeatRequest(version, r.string(), r.string(), r.int32(), r.nullable_string(), r.nullable_string(),
                            r.int32(), r.strings())
    if version >= 1:
        body.subscribed_topic_regex = r.nullable_string()
    body.server_assignor = r.nullable_string()
    body.topic_partitions = r.topic_partitions()
    r.no_tags()
    if r.pos != len(payload):
        return None
    return correlation_id, client_id, body


def _nullable_string(value: str | None) -> bytes:
    if value is None:
        return b"\x00"
    raw = value.encode("utf-8")
    return uvarint(len(raw) + 1) + raw


def _assignment(assignment: Assignment | None) -> bytes:
    if assignment is None:
        return b"\xff"  # a nullable struct in a flexible version: int8 -1 (null) or 1 then the struct
    parts = [b"\x01", uvarint(len(assignment.topic_partitions) + 1)]
    for topic in assignment.topic_partitions:
        partitions = topic.partitions
        parts += [topic.topic_id.bytes, uvarint(len(partitions) + 1),
                  struct.pack(f">{len(partitions)}i", *partitions), b"\x00"]
    parts.append(b"\x00")
    return b"".join(parts)


def encode_response(response: HeartbeatResponse, correlation_id: int) -> bytes:
    """The framed response: size, header v1 (correlation id, no tags), body, as the generic codec writes it."""
    tail = b"".join((
        _nullable_string(response.error_message),
        _nullable_string(response.member_id),
        _EPOCH_INTERVAL.pack(response.member_epoch, response.heartbeat_interval_ms),
        _assignment(response.assignment),
        b"\x00",
    ))
    head = _RESPONSE_HEAD.pack(_RESPONSE_HEAD.size - 4 + len(tail), correlation_id, 0, response.throttle_time_ms,
                               response.error_code)
    return head + tail
