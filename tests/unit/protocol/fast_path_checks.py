"""What the struct fast paths' tests (classic Heartbeat, ConsumerGroupHeartbeat) share: the framed payload of a
request, what a decoder makes of it, and a damaged copy of it drawn by Hypothesis."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import MalformedRequest


def payload(request: Any, client_id: str | None, correlation_id: int = 41) -> bytes:
    """The request as it arrives, without its size prefix."""
    return codec.encode_request(request, correlation_id, client_id)[4:]


def outcome(decode: Any, data: bytes) -> Any:
    """What ``decode`` makes of ``data``: the header and the body's fields, or that it was refused."""
    try:
        decoded = decode(data)
    except MalformedRequest:
        return "MalformedRequest"
    return decoded.api_key, decoded.api_version, decoded.correlation_id, decoded.client_id, \
        codec.generic(decoded.body)


def damaged(data: bytes, draw: st.DataObject) -> bytes:
    """``data`` truncated, with one byte changed, or with trailing bytes."""
    out = bytearray(data)
    cut = draw.draw(st.integers(0, len(out)))
    if draw.draw(st.booleans()):
        del out[cut:]
    elif cut < len(out):
        out[cut] = draw.draw(st.integers(0, 255))
    else:
        out += draw.draw(st.binary(min_size=1, max_size=3))
    return bytes(out)


def assert_the_generic_verdict(data: bytes) -> None:
    """The codec (fast path first) and the generic codec alone make the same of ``data``."""
    assert outcome(codec.decode_request, data) == outcome(codec.decode_request_generic, data)
