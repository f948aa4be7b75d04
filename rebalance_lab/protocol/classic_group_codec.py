"""A fast path for the classic JoinGroup (11) v0-9 and SyncGroup (14) v0-5: request decode and response encode.

A full rebalance of a 10,000-member group is 10,000 JoinGroups and 10,000 SyncGroups (issue 22). The schema
codec spent more server CPU on them than the coordinator did: its read plan, the message objects of every
request (and of each protocol entry), the answer's message objects and the walk that asks whether an answer is
big. This path reads and writes exactly the bytes of Kafka 4.4.0's ``JoinGroupRequest.json`` /
``JoinGroupResponse.json`` and ``SyncGroupRequest.json`` / ``SyncGroupResponse.json`` with ``struct``:

* JoinGroup request: GroupId, SessionTimeoutMs, RebalanceTimeoutMs (v1+), MemberId, GroupInstanceId (v5+,
  nullable), ProtocolType, Protocols [Name, Metadata], Reason (v8+, nullable); flexible from v6;
* JoinGroup response: ThrottleTimeMs (v2+), ErrorCode, GenerationId, ProtocolType (v7+, nullable),
  ProtocolName (nullable v7+), Leader, SkipAssignment (v9+), MemberId, Members [MemberId, GroupInstanceId
  (v5+, nullable), Metadata];
* SyncGroup request: GroupId, GenerationId, MemberId, GroupInstanceId (v3+, nullable), ProtocolType and
  ProtocolName (v5+, nullable), Assignments [MemberId, Assignment]; flexible from v4;
* SyncGroup response: ThrottleTimeMs (v1+), ErrorCode, ProtocolType and ProtocolName (v5+, nullable),
  Assignment.

``tests/unit/protocol/test_classic_group_codec.py`` checks it byte for byte against the generic codec
(Hypothesis) and pins the schema fields it was written for. Only the common shape is read: anything else (a
null where the schema forbids one, tagged fields, invalid UTF-8, trailing or missing bytes, a request over
:data:`MAX_FAST_BYTES`) makes the decoders return None and the caller uses the generic codec, so malformed
input gets exactly the generic codec's verdict; an answer the encoders cannot write (a null where the version
has no null) returns None and the generic codec writes it (and refuses it as it would).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rebalance_lab.protocol.fast_reader import FastReader, Unusual
from rebalance_lab.protocol.wire_primitives import request_header, uvarint

JOIN_KEY, SYNC_KEY = 11, 14
JOIN_VERSIONS = tuple(range(10))
SYNC_VERSIONS = tuple(range(6))
JOIN_FLEXIBLE, SYNC_FLEXIBLE = 6, 4  # flexibleVersions "6+" and "4+"
# A bigger request (the leader's SyncGroup of thousands of members) is left to the generic codec, which the shell
# runs in its codec thread, so one request never holds the loop while it is read (issue 17).
MAX_FAST_BYTES = 64 * 1024

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_II = struct.Struct(">ii")
_HEADER = struct.Struct(">ii")  # size, correlation id
_NULL_STRING = b"\xff\xff"


# -- request bodies (the generic codec's field names: the handlers and the fault controller read these) --------


@dataclass(slots=True)
class JoinGroupProtocol:
    name: str
    metadata: bytes


@dataclass(slots=True)
class JoinGroupRequest:
    version: int
    group_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int  # -1 (the schema's default) in v0, which has no such field
    member_id: str
    group_instance_id: str | None
    protocol_type: str
    protocols: list[JoinGroupProtocol]
    reason: str | None = None


@dataclass(slots=True)
class SyncGroupAssignment:
    member_id: str
    assignment: bytes


@dataclass(slots=True)
class SyncGroupRequest:
    version: int
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None
    protocol_type: str | None
    protocol_name: str | None
    assignments: list[SyncGroupAssignment]


# -- response bodies (mutable like the generic ones: the fault controller sets throttle_time_ms) ----------------


@dataclass(slots=True)
class JoinGroupResponse:
    """``members`` holds any objects with ``member_id``, ``group_instance_id`` and ``metadata`` (the coordinator's
    own member list as it is: no object is made per member for the leader's answer)."""

    version: int
    throttle_time_ms: int = 0
    error_code: int = 0
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = ""
    leader: str = ""
    skip_assignment: bool = False
    member_id: str = ""
    members: Sequence[Any] = field(default_factory=tuple)


@dataclass(slots=True)
class SyncGroupResponse:
    version: int
    throttle_time_ms: int = 0
    error_code: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


# -- reading -----------------------------------------------------------------------------------------------------


def _start(payload: bytes, api_key: int, versions: tuple[int, ...], flexible_from: int) -> tuple[int, int, str,
                                                                                                   FastReader] | None:
    if len(payload) > MAX_FAST_BYTES:
        return None
    header = request_header(payload, api_key, versions)
    if header is None:
        return None
    version, correlation_id, client_id, pos = header
    reader = FastReader(payload, pos, version >= flexible_from)
    reader.no_tags()  # request header v2's tagged fields
    return version, correlation_id, client_id, reader


def decode_join_request(payload: bytes) -> tuple[int, str, JoinGroupRequest] | None:
    """(correlation id, client id, body) of a JoinGroup v0-9, or None for the generic codec."""
    try:
        start = _start(payload, JOIN_KEY, JOIN_VERSIONS, JOIN_FLEXIBLE)
        if start is None:
            return None
        version, correlation_id, client_id, r = start
        group_id, session = r.string(), r.int32()
        rebalance = r.int32() if version >= 1 else -1
        member_id = r.string()
        instance_id = r.nullable_string() if version >= 5 else None
        protocol_type = r.string()
        protocols = []
        for _ in range(r.array_length()):
            name, metadata = r.string(), r.bytes_()
            r.no_tags()
            protocols.append(JoinGroupProtocol(name, metadata))
        reason = r.nullable_string() if version >= 8 else None
        r.end()
    except (Unusual, IndexError, struct.error, UnicodeDecodeError):
        return None
    return correlation_id, client_id, JoinGroupRequest(version, group_id, session, rebalance, member_id, instance_id,
                                                       protocol_type, protocols, reason)


def decode_sync_request(payload: bytes) -> tuple[int, str, SyncGroupRequest] | None:
    """(correlation id, client id, body) of a SyncGroup v0-5, or None for the generic codec."""
    try:
        start = _start(payload, SYNC_KEY, SYNC_VERSIONS, SYNC_FLEXIBLE)
        if start is None:
            return None
        version, correlation_id, client_id, r = start
        group_id, generation, member_id = r.string(), r.int32(), r.string()
        instance_id = r.nullable_string() if version >= 3 else None
        protocol_type, protocol_name = (r.nullable_string(), r.nullable_string()) if version >= 5 else (None, None)
        assignments = []
        for _ in range(r.array_length()):
            assigned, assignment = r.string(), r.bytes_()
            r.no_tags()
            assignments.append(SyncGroupAssignment(assigned, assignment))
        r.end()
    except (Unusual, IndexError, struct.error, UnicodeDecodeError):
        return None
    return correlation_id, client_id, SyncGroupRequest(version, group_id, generation, member_id, instance_id,
                                                       protocol_type, protocol_name, assignments)


# -- writing -----------------------------------------------------------------------------------------------------

_TEXT: dict[str, bytes] = {}  # the few strings every answer of a generation repeats (protocol names, the leader)


def _utf8(value: str) -> bytes:
    raw = _TEXT.get(value)
    if raw is None:
        raw = value.encode("utf-8")
        if len(_TEXT) < 4096:
            _TEXT[value] = raw
    return raw


def _string(parts: list[bytes], value: str | None, flexible: bool, nullable: bool) -> None:
    if value is None:
        if not nullable:
            raise Unusual("null in a non-nullable string")
        parts.append(b"\x00" if flexible else _NULL_STRING)
        return
    raw = _utf8(value)
    parts.append(uvarint(len(raw) + 1) if flexible else _I16.pack(len(raw)))
    parts.append(raw)


def _bytes(parts: list[bytes], value: bytes, flexible: bool) -> None:
    parts.append(uvarint(len(value) + 1) if flexible else _I32.pack(len(value)))
    parts.append(value)


def _array_length(parts: list[bytes], size: int, flexible: bool) -> None:
    parts.append(uvarint(size + 1) if flexible else _I32.pack(size))


def _framed(parts: list[bytes], correlation_id: int, flexible: bool) -> bytes:
    if flexible:
        parts.append(b"\x00")  # the body's tagged fields
    size = 4 + flexible + sum(map(len, parts))  # correlation id, response header v1's tags, body
    head = _HEADER.pack(size, correlation_id)
    return b"".join((head, b"\x00", *parts) if flexible else (head, *parts))


def encode_join_response(response: JoinGroupResponse, correlation_id: int) -> bytes | None:
    """The framed answer (size, header, body) as the generic codec writes it, or None to leave it to that codec."""
    version = response.version
    flexible = version >= JOIN_FLEXIBLE
    parts: list[bytes] = []
    try:
        if version >= 2:
            parts.append(_I32.pack(response.throttle_time_ms))
        parts.append(_I16.pack(response.error_code))
        parts.append(_I32.pack(response.generation_id))
        if version >= 7:
            _string(parts, response.protocol_type, flexible, True)
        _string(parts, response.protocol_name, flexible, version >= 7)
        _string(parts, response.leader, flexible, False)
        if version >= 9:
            parts.append(b"\x01" if response.skip_assignment else b"\x00")
        _string(parts, response.member_id, flexible, False)
        _members(parts, response.members, version, flexible)
    except (Unusual, struct.error, TypeError, AttributeError):
        return None
    return _framed(parts, correlation_id, flexible)


def _members(parts: list[bytes], members: Sequence[Any], version: int, flexible: bool) -> None:
    _array_length(parts, len(members), flexible)
    with_instance = version >= 5
    for member in members:
        _string(parts, member.member_id, flexible, False)
        if with_instance:
            _string(parts, member.group_instance_id, flexible, True)
        _bytes(parts, member.metadata, flexible)
        if flexible:
            parts.append(b"\x00")


def encode_sync_response(response: SyncGroupResponse, correlation_id: int) -> bytes | None:
    """The framed answer as the generic codec writes it, or None to leave it to that codec."""
    version = response.version
    flexible = version >= SYNC_FLEXIBLE
    parts: list[bytes] = []
    try:
        if version >= 1:
            parts.append(_I32.pack(response.throttle_time_ms))
        parts.append(_I16.pack(response.error_code))
        if version >= 5:
            _string(parts, response.protocol_type, flexible, True)
            _string(parts, response.protocol_name, flexible, True)
        _bytes(parts, response.assignment, flexible)
    except (Unusual, struct.error, TypeError):
        return None
    return _framed(parts, correlation_id, flexible)
