"""Bad input closes only the connection that sent it; every other connection keeps being served."""

from __future__ import annotations

import asyncio
import logging
import struct
from collections.abc import AsyncIterator

import pytest

from rebalance_lab.config import EmulatorConfig
from rebalance_lab.coordinator.server import EmulatorServer
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode
from tests.integration.wire import RawConnection

API_VERSIONS, FIND_COORDINATOR, JOIN_GROUP = 18, 10, 11


@pytest.fixture
async def server() -> AsyncIterator[EmulatorServer]:
    async with EmulatorServer(EmulatorConfig(port=0, max_request_bytes=1024)) as emulator:
        yield emulator


async def _connect(server: EmulatorServer) -> RawConnection:
    broker = server.world.cluster.brokers[0]
    return await RawConnection.open(broker.host, broker.port)


async def _assert_still_serving(server: EmulatorServer) -> None:
    conn = await _connect(server)
    response = await conn.request(API_VERSIONS, 3, client_software_name="t", client_software_version="1")
    assert response.error_code == ErrorCode.NONE
    await conn.close()


async def _assert_bad_input_closes_only_that_connection(
    server: EmulatorServer, data: bytes, caplog: pytest.LogCaptureFixture, reason: str
) -> None:
    bystander = await _connect(server)
    offender = await _connect(server)
    with caplog.at_level(logging.WARNING, logger="rebalance_lab.server"):
        await offender.send_raw(data)
        assert await offender.is_closed_by_peer()
    assert any(reason in r.getMessage() for r in caplog.records), [r.getMessage() for r in caplog.records]
    response = await bystander.request(API_VERSIONS, 0)
    assert response.error_code == ErrorCode.NONE
    await bystander.close()
    await _assert_still_serving(server)


async def test_an_oversized_frame_closes_that_connection_with_a_log_line(
    server: EmulatorServer, caplog: pytest.LogCaptureFixture
) -> None:
    await _assert_bad_input_closes_only_that_connection(
        server, struct.pack(">i", 1025) + b"x" * 16, caplog, "outside 0..1024"
    )


async def test_a_negative_frame_size_closes_that_connection(
    server: EmulatorServer, caplog: pytest.LogCaptureFixture
) -> None:
    await _assert_bad_input_closes_only_that_connection(server, struct.pack(">i", -5), caplog, "outside")


async def test_garbage_bytes_close_that_connection(server: EmulatorServer, caplog: pytest.LogCaptureFixture) -> None:
    garbage = bytes(range(7, 47))
    await _assert_bad_input_closes_only_that_connection(
        server, struct.pack(">i", len(garbage)) + garbage, caplog, "closing connection"
    )


async def test_a_request_body_that_does_not_decode_closes_that_connection(
    server: EmulatorServer, caplog: pytest.LogCaptureFixture
) -> None:
    # A FindCoordinator v4 header followed by a key-array count far larger than the bytes that follow.
    payload = struct.pack(">hhih", FIND_COORDINATOR, 4, 1, 0) + b"\x00" + b"\x00\x7f\xff\xff\xff"
    await _assert_bad_input_closes_only_that_connection(
        server, struct.pack(">i", len(payload)) + payload, caplog, "cannot decode"
    )


async def test_a_frame_shorter_than_a_request_header_closes_that_connection(
    server: EmulatorServer, caplog: pytest.LogCaptureFixture
) -> None:
    await _assert_bad_input_closes_only_that_connection(
        server, struct.pack(">i", 3) + b"abc", caplog, "shorter than a request header"
    )


async def test_an_unknown_api_key_closes_the_connection_as_kafka_does(
    server: EmulatorServer, caplog: pytest.LogCaptureFixture
) -> None:
    payload = struct.pack(">hhih", 999, 0, 1, 0)
    await _assert_bad_input_closes_only_that_connection(
        server, struct.pack(">i", len(payload)) + payload, caplog, "unknown or unadvertised api key 999"
    )


async def test_an_unsupported_version_of_another_api_closes_the_connection(
    server: EmulatorServer, caplog: pytest.LogCaptureFixture
) -> None:
    payload = struct.pack(">hhih", FIND_COORDINATOR, 99, 1, 0)
    await _assert_bad_input_closes_only_that_connection(
        server, struct.pack(">i", len(payload)) + payload, caplog, "unsupported version 99 of FindCoordinator"
    )


async def test_an_unsupported_api_versions_version_gets_a_v0_body_with_unsupported_version(
    server: EmulatorServer,
) -> None:
    conn = await _connect(server)
    payload = struct.pack(">hhih", API_VERSIONS, 127, 42, 1) + b"c" + b"\x00\x00\x00"
    await conn.send_raw(struct.pack(">i", len(payload)) + payload)
    response = codec.decode_response(API_VERSIONS, 0, await conn.read_frame())
    assert response.header.correlation_id == 42
    assert response.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert [(k.api_key, k.min_version, k.max_version) for k in response.api_keys] == [(API_VERSIONS, 0, 4)]
    again = await conn.request(API_VERSIONS, 4, client_software_name="c", client_software_version="1")
    assert again.error_code == ErrorCode.NONE
    await conn.close()


async def test_a_truncated_frame_followed_by_a_disconnect_leaves_the_server_serving(
    server: EmulatorServer,
) -> None:
    conn = await _connect(server)
    await conn.send_raw(struct.pack(">i", 100) + b"\x00\x12\x00")
    await conn.close()
    await _assert_still_serving(server)


async def test_a_client_disconnecting_mid_frame_size_leaves_the_server_serving(server: EmulatorServer) -> None:
    conn = await _connect(server)
    await conn.send_raw(b"\x00\x00")
    await conn.close()
    await _assert_still_serving(server)


async def test_pipelined_requests_are_answered_in_request_order(server: EmulatorServer) -> None:
    conn = await _connect(server)
    frames = b""
    for correlation in range(1, 51):
        api, version = (API_VERSIONS, 0) if correlation % 2 else (FIND_COORDINATOR, 1)
        fields = {} if api == API_VERSIONS else {"key": f"g{correlation}", "key_type": 0}
        frames += codec.encode_request(codec.new_request(api, version, **fields), correlation)
    await conn.send_raw(frames)
    seen = []
    for _ in range(50):
        payload = await conn.read_frame()
        seen.append(struct.unpack_from(">i", payload, 0)[0])
    assert seen == list(range(1, 51))
    await conn.close()


async def test_many_connections_are_served_at_once(server: EmulatorServer) -> None:
    conns = await asyncio.gather(*(_connect(server) for _ in range(50)))
    responses = await asyncio.gather(*(c.request(API_VERSIONS, 2) for c in conns))
    assert all(r.error_code == ErrorCode.NONE for r in responses)
    await asyncio.gather(*(c.close() for c in conns))


async def test_stop_closes_every_connection_and_leaves_no_task_or_listener() -> None:
    before = asyncio.all_tasks()
    server = EmulatorServer(EmulatorConfig(port=0, brokers=3))
    await server.start()
    ports = [b.port for b in server.world.cluster.live_brokers()]
    conns = [await RawConnection.open("127.0.0.1", p) for p in ports]
    await conns[0].request(API_VERSIONS, 0)
    await server.stop()
    for conn in conns:
        assert await conn.is_closed_by_peer()
        await conn.close()
    await asyncio.sleep(0)
    assert asyncio.all_tasks() - before == set()
    for port in ports:
        with pytest.raises(OSError):
            await RawConnection.open("127.0.0.1", port)


async def test_answers_before_a_parked_request_leave_without_waiting_for_it() -> None:
    """Pipelined frames of one read are answered together, except that a request which parks (a JoinGroup
    in its initial delay) does not hold back the answer to the request before it."""
    async with EmulatorServer(EmulatorConfig(port=0, manual_clock=True)) as server:
        conn = await _connect(server)
        proto = codec.data_class(codec.request_type(JOIN_GROUP), "JoinGroupRequestProtocol")
        join = codec.new_request(JOIN_GROUP, 1, group_id="g", session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
                                 member_id="", protocol_type="consumer", protocols=[proto(name="range", metadata=b"")])
        await conn.send_raw(codec.encode_request(codec.new_request(API_VERSIONS, 0), 1)
                            + codec.encode_request(join, 2))
        first = await asyncio.wait_for(conn.read_frame(), 5)
        assert struct.unpack_from(">i", first, 0)[0] == 1
        server.advance(server.config.group.initial_rebalance_delay_ms)
        second = await asyncio.wait_for(conn.read_frame(), 5)
        assert struct.unpack_from(">i", second, 0)[0] == 2
        assert codec.decode_response(JOIN_GROUP, 1, second).error_code == ErrorCode.NONE
        await conn.close()
