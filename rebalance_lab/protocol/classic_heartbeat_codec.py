"""A fast path for the classic Heartbeat (12) v0-4: request decode and response encode.

Every member of a classic group sends one Heartbeat per ``heartbeat.interval.ms``; at 10,000 members this
API is nearly all of the emulator's traffic (issue 22). The schema codec spent ~20 us of a heartbeat's
~170 us of server CPU on it (decoding through ``peek_header`` and the read plan, making two message
objects, encoding); this path reads and writes exactly the bytes of Kafka 4.4.0's
``HeartbeatRequest.json`` / ``HeartbeatResponse.json`` with ``struct``:

* v0-2: GroupId (string), GenerationId (int32), MemberId (string);
* v3: + GroupInstanceId (nullable string);
* v4: the same fields in the flexible encoding (compact strings, tagged fields, request header v2);
* the response: ThrottleTimeMs (int32, v1+) and ErrorCode (int16); response header v1 in v4.

``tests/unit/protocol/test_classic_heartbeat_codec.py`` checks it byte for byte against the generic
codec (Hypothesis) and pins the schema fields it was written for. Only the common shape is read here:
anything else (a null where the schema forbids one, tagged fields, invalid UTF-8, trailing or missing
bytes) makes :func:`decode_request` return None, and the caller uses the generic codec, so malformed
input gets exactly the generic codec's verdict.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from rebalance_lab.protocol.wire_primitives import request_header

API_KEY = 12
VERSIONS = (0, 1, 2, 3, 4)
FLEXIBLE = 4  # flexibleVersions "4+"

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
# Framed responses: size, correlation id, [header tags,] [throttle,] error code[, body tags].
_RESPONSE_V0 = struct.Struct(">iih")
_RESPONSE_V1 = struct.Struct(">iiih")
_RESPONSE_V4 = struct.Struct(">iibihb")


@dataclass(slots=True)
class HeartbeatRequest:
    """The request body, with the generic codec's field names (the handler and faults read these)."""

    version: int
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None


@dataclass(slots=True)
class HeartbeatResponse:
    """The response body; mutable like the generic one (the fault controller sets ``throttle_time_ms``)."""

    version: int
    throttle_time_ms: int = 0
    error_code: int = 0


class _Unusual(Exception):
    """Input the fast path leaves to the generic codec."""


def decode_request(payload: bytes) -> tuple[int, str, HeartbeatRequest] | None:
    """(correlation id, client id, body) of a v0-4 request, or None for the generic codec."""
    try:
        return _decode(payload)
    except (_Unusual, IndexError, struct.error, UnicodeDecodeError):
        return None


def _decode(payload: bytes) -> tuple[int, str, HeartbeatRequest] | None:
    header = request_header(payload, API_KEY, VERSIONS)
    if header is None:
        return None
    version, correlation_id, client_id, pos = header
    if version >= FLEXIBLE:
        if payload[pos] != 0:
            return None  # header tagged fields
        body = _flexible_body(payload, pos + 1)
    else:
        body = _classic_body(payload, pos, version)
    return correlation_id, client_id, body


def _string(payload: bytes, pos: int) -> tuple[str | None, int]:
    """A classic (int16-length) nullable string and the position after it."""
    (length,) = _I16.unpack_from(payload, pos)
    pos += 2
    if length < 0:
        return None, pos
    end = pos + length
    if end > len(payload):
        raise _Unusual("string past the end")
    return payload[pos:end].decode("utf-8"), end


def _classic_body(payload: bytes, pos: int, version: int) -> HeartbeatRequest:
    group_id, pos = _string(payload, pos)
    (generation,) = _I32.unpack_from(payload, pos)
    member_id, pos = _string(payload, pos + 4)
    instance_id = None
    if version >= 3:
        instance_id, pos = _string(payload, pos)
    if group_id is None or member_id is None or pos != len(payload):
        raise _Unusual("a null non-nullable string, or trailing bytes")
    return HeartbeatRequest(version, group_id, generation, member_id, instance_id)


def _compact_string(payload: bytes, pos: int) -> tuple[str | None, int]:
    """A compact nullable string whose length fits one varint byte (longer ones go to the generic codec)."""
    length = payload[pos] - 1
    if length >= 0x7F:
        raise _Unusual("a multi-byte varint length")
    pos += 1
    if length < 0:
        return None, pos
    end = pos + length
    if end > len(payload):
        raise _Unusual("string past the end")
    return payload[pos:end].decode("utf-8"), end


def _flexible_body(payload: bytes, pos: int) -> HeartbeatRequest:
    group_id, pos = _compact_string(payload, pos)
    (generation,) = _I32.unpack_from(payload, pos)
    member_id, pos = _compact_string(payload, pos + 4)
    instance_id, pos = _compact_string(payload, pos)
    if group_id is None or member_id is None or payload[pos] != 0 or pos + 1 != len(payload):
        raise _Unusual("a null non-nullable string, tagged fields or trailing bytes")
    return HeartbeatRequest(FLEXIBLE, group_id, generation, member_id, instance_id)


def encode_response(response: HeartbeatResponse, correlation_id: int) -> bytes:
    """The framed response (size, header, body), as the generic codec writes it."""
    version = response.version
    if version >= FLEXIBLE:  # header v1 (no tags), throttle, error code, no body tags
        return _RESPONSE_V4.pack(_RESPONSE_V4.size - 4, correlation_id, 0, response.throttle_time_ms,
                                 response.error_code, 0)
    if version >= 1:
        return _RESPONSE_V1.pack(_RESPONSE_V1.size - 4, correlation_id, response.throttle_time_ms,
                                 response.error_code)
    return _RESPONSE_V0.pack(_RESPONSE_V0.size - 4, correlation_id, response.error_code)
