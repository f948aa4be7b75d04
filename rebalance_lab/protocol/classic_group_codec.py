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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rebalance_lab.native import native
from rebalance_lab.protocol.fast_reader import Unusual, compact_length_at, compact_string_at, string16_at
from rebalance_lab.protocol.wire_primitives import request_header, uvarint

JOIN_KEY, SYNC_KEY = 11, 14
JOIN_VERSIONS = tuple(range(10))
SYNC_VERSIONS = tuple(range(6))
JOIN_FLEXIBLE, SYNC_FLEXIBLE = 6, 4  # flexibleVersions "6+" and "4+"
# A bigger request (the leader's SyncGroup of thousands of members) is not taken at arrival: the shell's task reads
# it (with these decoders, unbounded; in its codec thread from OFFLOAD_BYTES), so one request never holds the loop
# while it is read (issue 17).
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
    # The Protocols array's bytes as sent (without its length), in the version's form (classic before v6, compact
    # from v6): equal keys of one form are equal protocol lists, so the handler reuses one list's values for every
    # member that sends it (issue 22). None when the body did not come from these bytes.
    protocols_key: bytes | None = None


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


def decode_join_request_py(payload: bytes, max_bytes: int | None = MAX_FAST_BYTES
                           ) -> tuple[int, str, JoinGroupRequest] | None:
    """(correlation id, client id, body) of a JoinGroup v0-9, or None for the generic codec; ``max_bytes`` None:
    any size (the shell's codec thread reads a big one so, server.py)."""
    if max_bytes is not None and len(payload) > max_bytes:
        return None
    try:
        header = request_header(payload, JOIN_KEY, JOIN_VERSIONS)
        if header is None:
            return None
        version, correlation_id, client_id, pos = header
        body = (_join_compact if version >= JOIN_FLEXIBLE else _join_classic)(payload, pos, version)
    except (Unusual, IndexError, struct.error, UnicodeDecodeError):
        return None
    return None if body is None else (correlation_id, client_id, body)


def _join_classic(data: bytes, pos: int, version: int) -> JoinGroupRequest | None:
    """v0-5: int16 string lengths, int32 bytes and array lengths, no tagged fields."""
    group_id, pos = string16_at(data, pos)
    (session,) = _I32.unpack_from(data, pos)
    pos += 4
    rebalance = -1
    if version >= 1:
        (rebalance,) = _I32.unpack_from(data, pos)
        pos += 4
    member_id, pos = string16_at(data, pos)
    instance_id = None
    if version >= 5:
        instance_id, pos = string16_at(data, pos)
    protocol_type, pos = string16_at(data, pos)
    (count,) = _I32.unpack_from(data, pos)
    pos += 4
    start = pos
    protocols, pos = _named_bytes16(data, pos, count, JoinGroupProtocol)
    if protocols is None:
        return None
    if group_id is None or member_id is None or protocol_type is None or count < 0 or pos != len(data):
        return None
    return JoinGroupRequest(version, group_id, session, rebalance, member_id, instance_id, protocol_type, protocols,
                            None, data[start:pos])


def _named_bytes16(data: bytes, pos: int, count: int, make: Any) -> tuple[list[Any] | None, int]:
    """A classic array of (string, bytes) entries (JoinGroup's protocols, SyncGroup's assignments), each made by
    ``make(name, data)``, and the position after it; None for a null name or a negative size (the generic codec's)."""
    entries = []
    for _ in range(count):
        name, pos = string16_at(data, pos)
        (size,) = _I32.unpack_from(data, pos)
        pos += 4
        if name is None or size < 0:
            return None, pos
        entries.append(make(name, data[pos:pos + size]))
        pos += size
    return entries, pos


def _join_compact(data: bytes, pos: int, version: int) -> JoinGroupRequest | None:
    """v6-9 (flexible): compact lengths, and only empty tagged-field sets are taken."""
    if data[pos]:
        return None  # the header's tagged fields
    group_id, pos = compact_string_at(data, pos + 1)
    session, rebalance = _II.unpack_from(data, pos)
    member_id, pos = compact_string_at(data, pos + 8)
    instance_id, pos = compact_string_at(data, pos)
    protocol_type, pos = compact_string_at(data, pos)
    count, pos = compact_length_at(data, pos)
    start, protocols = pos, []
    for _ in range(count):
        name, pos = compact_string_at(data, pos)
        size, pos = compact_length_at(data, pos)
        end = pos + size
        if name is None or size < 0 or data[end]:  # data[end]: the protocol's tagged fields
            return None
        protocols.append(JoinGroupProtocol(name, data[pos:end]))
        pos = end + 1
    protocols_key = data[start:pos]
    reason = None
    if version >= 8:
        reason, pos = compact_string_at(data, pos)
    if group_id is None or member_id is None or protocol_type is None or count < 0 or data[pos] \
            or pos + 1 != len(data):
        return None
    return JoinGroupRequest(version, group_id, session, rebalance, member_id, instance_id, protocol_type, protocols,
                            reason, protocols_key)


def decode_sync_request_py(payload: bytes, max_bytes: int | None = MAX_FAST_BYTES
                           ) -> tuple[int, str, SyncGroupRequest] | None:
    """(correlation id, client id, body) of a SyncGroup v0-5, or None for the generic codec; ``max_bytes`` None:
    any size (the leader's SyncGroup of thousands of assignments, read in the shell's codec thread: server.py)."""
    if max_bytes is not None and len(payload) > max_bytes:
        return None
    try:
        header = request_header(payload, SYNC_KEY, SYNC_VERSIONS)
        if header is None:
            return None
        version, correlation_id, client_id, pos = header
        body = (_sync_compact if version >= SYNC_FLEXIBLE else _sync_classic)(payload, pos, version)
    except (Unusual, IndexError, struct.error, UnicodeDecodeError):
        return None
    return None if body is None else (correlation_id, client_id, body)


def _sync_classic(data: bytes, pos: int, version: int) -> SyncGroupRequest | None:
    group_id, pos = string16_at(data, pos)
    (generation,) = _I32.unpack_from(data, pos)
    member_id, pos = string16_at(data, pos + 4)
    instance_id = None
    if version >= 3:
        instance_id, pos = string16_at(data, pos)
    (count,) = _I32.unpack_from(data, pos)
    pos += 4
    assignments, pos = _named_bytes16(data, pos, count, SyncGroupAssignment)
    if assignments is None:
        return None
    if group_id is None or member_id is None or count < 0 or pos != len(data):
        return None
    return SyncGroupRequest(version, group_id, generation, member_id, instance_id, None, None, assignments)


def _sync_compact(data: bytes, pos: int, version: int) -> SyncGroupRequest | None:
    if data[pos]:
        return None  # the header's tagged fields
    group_id, pos = compact_string_at(data, pos + 1)
    (generation,) = _I32.unpack_from(data, pos)
    member_id, pos = compact_string_at(data, pos + 4)
    instance_id, pos = compact_string_at(data, pos)
    protocol_type = protocol_name = None
    if version >= 5:
        protocol_type, pos = compact_string_at(data, pos)
        protocol_name, pos = compact_string_at(data, pos)
    count, pos = compact_length_at(data, pos)
    assignments = []
    for _ in range(count):
        assigned, pos = compact_string_at(data, pos)
        size, pos = compact_length_at(data, pos)
        end = pos + size
        if assigned is None or size < 0 or data[end]:
            return None
        assignments.append(SyncGroupAssignment(assigned, data[pos:end]))
        pos = end + 1
    if group_id is None or member_id is None or count < 0 or data[pos] or pos + 1 != len(data):
        return None
    return SyncGroupRequest(version, group_id, generation, member_id, instance_id, protocol_type, protocol_name,
                            assignments)


# -- writing -----------------------------------------------------------------------------------------------------
# Each encoder writes one version form (classic or compact) field after field into a list joined once. A string is
# written from a cache of its length-prefixed bytes: an answer's strings repeat (the protocol names and the leader in
# every answer of a generation, each member's id in its own answer and in the leader's list), and a field written
# through a general helper per string was most of an answer's cost (issue 22). Any value the form cannot carry (a null
# where it has none, a string over the int16 length, a wrong type) raises, and the answer is left to the generic codec.

_CLASSIC_TEXT: dict[str, bytes] = {}  # a string -> int16 length and UTF-8
_COMPACT_TEXT: dict[str, bytes] = {}  # a string -> varint(length + 1) and UTF-8
_MAX_TEXT = 65_536  # strings kept per form (beyond it the rest are written each time)
_NULL_COMPACT = b"\x00"
_I16I32 = struct.Struct(">hi")  # error code, generation id
_I32I16I32 = struct.Struct(">ihi")  # throttle time, error code, generation id
_I32I16 = struct.Struct(">ih")  # throttle time, error code


def _classic(value: str) -> bytes:
    raw = _CLASSIC_TEXT.get(value)
    if raw is None:
        data = value.encode("utf-8")  # None (a null where the field has none) raises AttributeError
        raw = _I16.pack(len(data)) + data
        if len(_CLASSIC_TEXT) < _MAX_TEXT:
            _CLASSIC_TEXT[value] = raw
    return raw


def _classic_nullable(value: str | None) -> bytes:
    return _NULL_STRING if value is None else _classic(value)


def _compact(value: str) -> bytes:
    raw = _COMPACT_TEXT.get(value)
    if raw is None:
        data = value.encode("utf-8")
        raw = uvarint(len(data) + 1) + data
        if len(_COMPACT_TEXT) < _MAX_TEXT:
            _COMPACT_TEXT[value] = raw
    return raw


def _compact_nullable(value: str | None) -> bytes:
    return _NULL_COMPACT if value is None else _compact(value)


_ENCODE_ERRORS = (Unusual, struct.error, TypeError, AttributeError)


def encode_join_response_py(response: JoinGroupResponse, correlation_id: int) -> bytes | None:
    """The framed answer (size, header, body) as the generic codec writes it, or None to leave it to that codec."""
    try:
        if response.version >= JOIN_FLEXIBLE:
            return _join_compact_answer(response, correlation_id)
        return _join_classic_answer(response, correlation_id)
    except _ENCODE_ERRORS:
        return None


def _join_classic_answer(response: JoinGroupResponse, correlation_id: int) -> bytes:
    """v0-5: no protocol type, a non-nullable protocol name, instance ids from v5."""
    version = response.version
    if version >= 2:
        parts = [_I32I16I32.pack(response.throttle_time_ms, response.error_code, response.generation_id)]
    else:
        parts = [_I16I32.pack(response.error_code, response.generation_id)]
    members = response.members
    parts += (_classic(response.protocol_name), _classic(response.leader),  # type: ignore[arg-type]
              _classic(response.member_id), _I32.pack(len(members)))
    if version >= 5:
        for member in members:
            metadata = member.metadata
            parts += (_classic(member.member_id), _classic_nullable(member.group_instance_id),
                      _I32.pack(len(metadata)), metadata)
    else:
        for member in members:
            metadata = member.metadata
            parts += (_classic(member.member_id), _I32.pack(len(metadata)), metadata)
    return _framed(parts, correlation_id, False)


def _join_compact_answer(response: JoinGroupResponse, correlation_id: int) -> bytes:
    """v6-9: compact forms and tagged fields; the protocol type and a null protocol name from v7, SkipAssignment
    from v9."""
    version = response.version
    parts = [_I32I16I32.pack(response.throttle_time_ms, response.error_code, response.generation_id)]
    if version >= 7:
        parts += (_compact_nullable(response.protocol_type), _compact_nullable(response.protocol_name))
    else:
        parts.append(_compact(response.protocol_name))  # type: ignore[arg-type]
    parts.append(_compact(response.leader))
    if version >= 9:
        parts.append(b"\x01" if response.skip_assignment else b"\x00")
    members = response.members
    parts += (_compact(response.member_id), uvarint(len(members) + 1))
    for member in members:
        metadata = member.metadata
        parts += (_compact(member.member_id), _compact_nullable(member.group_instance_id),
                  uvarint(len(metadata) + 1), metadata, b"\x00")
    return _framed(parts, correlation_id, True)


def encode_sync_response_py(response: SyncGroupResponse, correlation_id: int) -> bytes | None:
    """The framed answer as the generic codec writes it, or None to leave it to that codec."""
    version = response.version
    assignment = response.assignment
    try:
        if version < SYNC_FLEXIBLE:
            parts = [_I32I16.pack(response.throttle_time_ms, response.error_code) if version >= 1
                     else _I16.pack(response.error_code), _I32.pack(len(assignment)), assignment]
            return _framed(parts, correlation_id, False)
        parts = [_I32I16.pack(response.throttle_time_ms, response.error_code)]
        if version >= 5:
            parts += (_compact_nullable(response.protocol_type), _compact_nullable(response.protocol_name))
        parts += (uvarint(len(assignment) + 1), assignment)
        return _framed(parts, correlation_id, True)
    except _ENCODE_ERRORS:
        return None


def _framed(parts: list[bytes], correlation_id: int, flexible: bool) -> bytes:
    if flexible:
        parts.append(b"\x00")  # the body's tagged fields
    size = 4 + flexible + sum(map(len, parts))  # correlation id, response header v1's tags, body
    head = _HEADER.pack(size, correlation_id)
    return b"".join((head, b"\x00", *parts) if flexible else (head, *parts))


# -- the C twin ----------------------------------------------------------------------------------------------------
# _classic_group.c reads and writes the usual shape itself and hands anything else to the functions above, with the
# same arguments (its docstring; tests/unit/protocol/test_classic_group_native.py): the names the callers use are its
# functions when the compiled build has it, else these.

DecodeRequest = Callable[..., "tuple[int, str, Any] | None"]
EncodeResponse = Callable[[Any, int], "bytes | None"]
NATIVE = native("rebalance_lab.protocol._classic_group")
if NATIVE is not None:
    NATIVE.setup((JoinGroupProtocol, JoinGroupRequest, SyncGroupAssignment, SyncGroupRequest),
                 (decode_join_request_py, decode_sync_request_py, encode_join_response_py, encode_sync_response_py),
                 MAX_FAST_BYTES)
decode_join_request: DecodeRequest = decode_join_request_py if NATIVE is None else NATIVE.decode_join_request
decode_sync_request: DecodeRequest = decode_sync_request_py if NATIVE is None else NATIVE.decode_sync_request
encode_join_response: EncodeResponse = encode_join_response_py if NATIVE is None else NATIVE.encode_join_response
encode_sync_response: EncodeResponse = encode_sync_response_py if NATIVE is None else NATIVE.encode_sync_response
