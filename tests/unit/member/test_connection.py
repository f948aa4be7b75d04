"""The connection's framing and correlation, driven through a fake transport (no sockets)."""

from __future__ import annotations

import asyncio
import struct
from typing import Any

import pytest

from rebalance_lab.clients.member.connection import Connection, ConnectionLost, ProtocolViolation, split_bootstrap
from rebalance_lab.protocol import codec


class FakeTransport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.written: list[bytes] = []
        self.closing = False

    def write(self, data: Any) -> None:
        self.written.append(bytes(data))

    def is_closing(self) -> bool:
        return self.closing

    def abort(self) -> None:
        self.closing = True

    def close(self) -> None:
        self.closing = True


def _connected() -> tuple[Connection, FakeTransport]:
    conn = Connection("tester")
    transport = FakeTransport()
    conn.connection_made(transport)
    return conn, transport


def _heartbeat_request() -> Any:
    return codec.new_request(12, 4, group_id="g", generation_id=1, member_id="m", group_instance_id=None)


def _heartbeat_response(correlation_id: int, error: int) -> bytes:
    return codec.encode_response(codec.new_response(12, 4, throttle_time_ms=0, error_code=error), correlation_id)


def _correlation_of(frame: bytes) -> int:
    value: int = struct.unpack_from(">i", frame, 8)[0]
    return value


async def test_pipelined_requests_are_answered_in_order_even_when_bytes_arrive_in_pieces() -> None:
    conn, transport = _connected()
    first, second = conn.send(_heartbeat_request()), conn.send(_heartbeat_request())
    ids = [_correlation_of(frame) for frame in transport.written]
    assert ids == [1, 2] and conn.in_flight == 2
    data = _heartbeat_response(ids[0], 0) + _heartbeat_response(ids[1], 27)
    for i in range(0, len(data), 3):
        conn.data_received(data[i : i + 3])
    assert (await first).error_code == 0
    assert (await second).error_code == 27
    assert conn.in_flight == 0


async def test_an_unexpected_correlation_id_aborts_the_connection() -> None:
    conn, _ = _connected()
    pending = conn.send(_heartbeat_request())
    conn.data_received(_heartbeat_response(99, 0))
    with pytest.raises(ProtocolViolation):
        await pending
    assert not conn.is_open


async def test_losing_the_connection_fails_every_request_in_flight() -> None:
    conn, _ = _connected()
    pending = [conn.send(_heartbeat_request()) for _ in range(3)]
    conn.connection_lost(None)
    for future in pending:
        with pytest.raises(ConnectionLost):
            await future
    with pytest.raises(ConnectionLost):
        await conn.send(_heartbeat_request())


def test_pick_respects_both_the_broker_range_and_the_preference() -> None:
    conn, _ = _connected()
    conn.api_versions = {11: (2, 9), 12: (0, 2)}
    assert conn.pick(11, 9) == 9
    assert conn.pick(11, 1) == 2  # KIP-896: the broker removed v0-1
    assert conn.pick(12, 4) == 2
    assert conn.pick(14, 5) == 5  # not negotiated: trust the caller


def test_bootstrap_strings_are_split_into_host_port_pairs() -> None:
    assert split_bootstrap("a:1, b:2") == [("a", 1), ("b", 2)]
    assert split_bootstrap("[::1]:9092") == [("::1", 9092)]
    with pytest.raises(ValueError):
        split_bootstrap(" , ")
