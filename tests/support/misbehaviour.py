"""Frames and readers for misbehaving clients (tests/integration/test_misbehaving_clients.py, benchmarks).

The frames are built by hand because kafka-python's encoder needs seconds for a request naming
hundreds of thousands of topics; a test checks they decode as the requests they claim to be.
"""

from __future__ import annotations

import asyncio
import struct

from rebalance_lab.protocol import codec

_METADATA, _METADATA_VERSION = 3, 12


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def metadata_request_naming(names: list[str], correlation_id: int = 1, client_id: str = "big") -> bytes:
    """A framed Metadata v12 request for ``names`` (no auto-creation), as a Java client would encode it."""
    client = client_id.encode()
    parts = [struct.pack(">hhih", _METADATA, _METADATA_VERSION, correlation_id, len(client)), client, b"\x00",
             _uvarint(len(names) + 1)]
    zero_id = bytes(16)
    for name in names:
        raw = name.encode()
        parts += (zero_id, _uvarint(len(raw) + 1), raw, b"\x00")
    parts.append(b"\x00\x00\x00")  # allow_auto_topic_creation, include_topic_authorized_operations, no tags
    body = b"".join(parts)
    return struct.pack(">i", len(body)) + body


def pipelined_requests(api_key: int, count: int, version: int | None = None) -> bytes:
    """``count`` framed requests with correlation ids 1..count: ApiVersions v3, or all-topics Metadata v12."""
    if api_key == _METADATA:
        one = codec.new_request(_METADATA, version or _METADATA_VERSION, topics=None,
                                allow_auto_topic_creation=False)
    else:
        one = codec.new_request(api_key, version or 3, client_software_name="pipeliner",
                                client_software_version="1")
    return b"".join(codec.encode_request(one, i, "pipeliner") for i in range(1, count + 1))


async def read_correlation_ids(reader: asyncio.StreamReader, count: int, timeout: float = 120.0) -> list[int]:
    """Read ``count`` response frames and return their correlation ids (the bodies are not decoded)."""
    ids: list[int] = []
    async with asyncio.timeout(timeout):
        for _ in range(count):
            (size,) = struct.unpack(">i", await reader.readexactly(4))
            frame = await reader.readexactly(size)
            ids.append(struct.unpack_from(">i", frame)[0])
    return ids
