"""One misbehaving client never hurts another (issue 17, defects 1, 4 and 8).

Each test runs a canary group (tests/support/canary.py: classic members with a 2 s session and a
KIP-848 member, in their own thread) while one kind of misbehaviour runs against the same emulated
broker, then checks that the canary lost no member and saw no rebalance, and that the misbehaving
client got what Kafka gives it. The server allows 2 s sessions (``group.min.session.timeout.ms``)
so a loop stalled for seconds, as it was before the shell served one request per connection at a
time and decoded big frames off the loop, loses canary members; the assertions are on membership
and answers, never on timings.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncIterator

import pytest

from rebalance_lab.api import Emulator
from rebalance_lab.cli import build_parser, config_from_args
from rebalance_lab.config import EmulatorConfig, GroupConfig
from rebalance_lab.coordinator.server import EmulatorServer
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode
from tests.integration.wire import RawConnection
from tests.support.canary import Canary
from tests.support.misbehaviour import (
    metadata_request_naming,
    pipelined_requests,
    read_correlation_ids,
)

METADATA, API_VERSIONS, JOIN_GROUP = 3, 18, 11
SESSION_MS = 2_000


def _config(**overrides: object) -> EmulatorConfig:
    group = GroupConfig(initial_rebalance_delay_ms=0, min_session_timeout_ms=1_000)
    return EmulatorConfig(port=0, group=group, **overrides)  # type: ignore[arg-type]


@pytest.fixture
async def server() -> AsyncIterator[EmulatorServer]:
    async with EmulatorServer(_config(topics=tuple((f"topic-{i}", 3) for i in range(40)))) as emulator:
        yield emulator


def _canary(server: EmulatorServer) -> Canary:
    return Canary(server.bootstrap_servers, session_timeout_ms=SESSION_MS, heartbeat_interval_ms=100)


async def _open(server: EmulatorServer) -> RawConnection:
    broker = server.world.cluster.brokers[0]
    return await RawConnection.open(broker.host, broker.port)


async def test_a_10_mb_metadata_request_is_answered_without_hurting_another_group(server: EmulatorServer) -> None:
    names = [f"no-such-topic-{i:012d}" for i in range(250_000)]
    frame = metadata_request_naming(names, correlation_id=7)
    assert len(frame) > 10_000_000
    async with _canary(server) as canary:
        offender = await _open(server)
        await offender.send_raw(frame)
        payload = await offender.read_frame(timeout=120)
    canary.report.assert_healthy()
    response = await asyncio.to_thread(codec.decode_response, METADATA, 12, payload)
    assert response.header.correlation_id == 7
    assert len(response.topics) == len(names)  # Kafka answers every name, each UNKNOWN_TOPIC_OR_PARTITION
    assert {t.error_code for t in response.topics} == {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert [t.name for t in response.topics[:3]] == names[:3]
    await offender.close()


@pytest.mark.parametrize(("clients", "api_key", "count"), [(1, METADATA, 1_500), (10, API_VERSIONS, 1_000)],
                         ids=["one-client-all-topics-metadata", "ten-clients-api-versions"])
async def test_clients_pipelining_without_reading_their_answers_starve_no_one(
    server: EmulatorServer, clients: int, api_key: int, count: int
) -> None:
    offenders = [await _open(server) for _ in range(clients)]
    async with _canary(server) as canary:
        for offender in offenders:
            offender.writer.write(pipelined_requests(api_key, count))  # written, never drained nor read
        await asyncio.sleep(2 * SESSION_MS / 1000)  # the canary heartbeats meanwhile
        # Then they read: every answer arrives, in request order (Kafka keeps a connection's order).
        answered = await asyncio.gather(*(read_correlation_ids(o.reader, count) for o in offenders))
    canary.report.assert_healthy()
    assert all(ids == list(range(1, count + 1)) for ids in answered)
    for offender in offenders:
        await offender.close()


async def test_a_client_trickling_a_frame_byte_by_byte_is_answered_and_hurts_no_one(server: EmulatorServer) -> None:
    request = codec.encode_request(codec.new_request(API_VERSIONS, 3, client_software_name="slow",
                                                     client_software_version="1"), 5, "trickle")
    async with _canary(server) as canary:
        offender = await _open(server)
        for byte in request:
            await offender.send_raw(bytes([byte]))
            await asyncio.sleep(0.01)
        payload = await offender.read_frame()
    canary.report.assert_healthy()
    response = codec.decode_response(API_VERSIONS, 3, payload)
    assert (response.header.correlation_id, response.error_code) == (5, ErrorCode.NONE)
    await offender.close()


async def test_an_idle_connection_is_closed_after_connections_max_idle_ms_and_no_one_else_is() -> None:
    async with EmulatorServer(_config(connections_max_idle_ms=500)) as server:
        async with _canary(server) as canary:
            idle = await _open(server)
            answered = await idle.request(API_VERSIONS, 0)  # active once, then silent
            assert answered.error_code == ErrorCode.NONE
            assert await idle.is_closed_by_peer(timeout=10)  # Kafka's Selector closes it (CloseMode.GRACEFUL)
        canary.report.assert_healthy()  # heartbeating every 100 ms: never idle


async def test_a_connection_waiting_for_its_join_group_answer_is_not_idle() -> None:
    async with EmulatorServer(_config(connections_max_idle_ms=300)) as server:
        protocol = codec.data_class(codec.request_type(JOIN_GROUP), "JoinGroupRequestProtocol")
        fields = dict(group_id="parked", session_timeout_ms=10_000, rebalance_timeout_ms=1_500,
                      group_instance_id=None, protocol_type="consumer",
                      protocols=[protocol(name="range", metadata=b"")])
        silent, waiting = await _open(server), await _open(server)
        first = await silent.request(JOIN_GROUP, 5, member_id="", **fields)
        assert (await silent.request(JOIN_GROUP, 5, member_id=first.member_id, **fields)).error_code == 0
        second = await waiting.request(JOIN_GROUP, 5, member_id="", **fields)
        # A new member starts a rebalance; its JoinGroup waits for the silent member to rejoin, which it
        # never does, so the answer comes after the 1.5 s rebalance timeout: five idle periods later.
        joined = await waiting.request(JOIN_GROUP, 5, member_id=second.member_id, **fields)
        assert (joined.error_code, joined.leader, joined.generation_id) == (ErrorCode.NONE, second.member_id, 2)
        assert await silent.is_closed_by_peer(timeout=1)  # meanwhile the silent one was idle, and closed
        await waiting.close()


def test_the_frames_the_misbehaving_clients_send_are_what_kafka_clients_would_send() -> None:
    frame = metadata_request_naming(["a", "bc"], correlation_id=3)
    (size,) = struct.unpack_from(">i", frame)
    decoded = codec.decode_request(frame[4:])
    assert size == len(frame) - 4
    assert (decoded.api_key, decoded.api_version, decoded.correlation_id) == (METADATA, 12, 3)
    assert [t.name for t in decoded.body.topics] == ["a", "bc"]
    assert decoded.body.allow_auto_topic_creation is False


def test_connections_max_idle_ms_is_an_option_of_serve_and_of_the_python_api() -> None:
    assert config_from_args(build_parser().parse_args(["serve"])).connections_max_idle_ms == 600_000  # Kafka's
    args = build_parser().parse_args(["serve", "--connections-max-idle-ms", "-1"])
    assert config_from_args(args).connections_max_idle_ms == -1
    assert Emulator(connections_max_idle_ms=1_500).config.connections_max_idle_ms == 1_500


async def test_a_negative_connections_max_idle_ms_never_closes_an_idle_connection() -> None:
    async with EmulatorServer(_config(connections_max_idle_ms=-1)) as server:
        idle = await _open(server)
        assert (await idle.request(API_VERSIONS, 0)).error_code == ErrorCode.NONE
        with pytest.raises(TimeoutError):  # neither an answer nor the end of the stream
            await asyncio.wait_for(idle.reader.read(1), 0.6)
        assert (await idle.request(API_VERSIONS, 0)).error_code == ErrorCode.NONE
        await idle.close()
