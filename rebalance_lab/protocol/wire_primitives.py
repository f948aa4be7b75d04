"""Small pieces of Kafka's wire format shared by the schema codec, the struct fast paths and the replay's Parquet
writer (Thrift's compact protocol uses the same unsigned varint)."""

from __future__ import annotations

import struct

# api key, version, correlation id, client id length: request header v1 and v2 begin so
REQUEST_HEADER = struct.Struct(">hhih")

_SMALL = [bytes([n]) for n in range(0x80)]


def uvarint(value: int) -> bytes:
    """``value`` (>= 0) as an unsigned varint: 7 bits a byte, the low ones first, the high bit set on all but the
    last byte (``ByteUtils.writeUnsignedVarint``)."""
    if value < 0x80:
        return _SMALL[value]
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def varint(value: int) -> bytes:
    """A signed value as a zig-zag varint (``ByteUtils.writeVarlong``; Thrift's compact integers too)."""
    return uvarint((value << 1) ^ (value >> 63))


def request_header(payload: bytes, api_key: int, versions: tuple[int, ...]) -> tuple[int, int, str, int] | None:
    """(version, correlation id, client id, position after the client id) of a request of ``api_key`` in one of
    ``versions``; None for any other request. Raises ``struct.error``/``UnicodeDecodeError`` on damaged bytes."""
    key, version, correlation_id, client_length = REQUEST_HEADER.unpack_from(payload, 0)
    if key != api_key or version not in versions:
        return None
    pos = REQUEST_HEADER.size + max(client_length, 0)
    if pos > len(payload):
        return None
    client_id = payload[REQUEST_HEADER.size : pos].decode("utf-8") if client_length > 0 else ""
    return version, correlation_id, client_id, pos
