"""Heartbeats answered as their bytes arrive (issue 22) keep a connection's order, its turn and its verdicts.

The shell answers a heartbeat in the callback that receives it while the connection's task waits with nothing
half-received (coordinator/connection.py ArrivingReader); everything else, and whatever follows it, is the
task's. These tests pipeline requests in one write and check what comes back.
"""

from __future__ import annotations

import struct
from collections.abc import AsyncIterator
from typing import Any

import pytest

from rebalance_lab.config import EmulatorConfig, GroupConfig
from rebalance_lab.coordinator import server as server_module
from rebalance_lab.coordinator.server import EmulatorServer
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.assignment_types import Subscription
from rebalance_lab.protocol.consumer_protocol import encode_subscription
from rebalance_lab.protocol.errors import ErrorCode
from tests.integration.wire import RawConnection

JOIN, HEARTBEAT, SYNC = 11, 12, 14
_PROTOCOL = codec.data_class(codec.request_type(JOIN), "JoinGroupRequestProtocol")
METADATA = encode_subscription(Subscription(topics=("t",)))


@pytest.fixture
async def server() -> AsyncIterator[EmulatorServer]:
    group = GroupConfig(initial_rebalance_delay_ms=0, join_race="separate")
    config = EmulatorConfig(port=0, topics=(("t", 2),), group=group)
    async with EmulatorServer(config) as emulator:
        yield emulator


async def _connect(server: EmulatorServer) -> RawConnection:
    broker = server.world.cluster.brokers[0]
    return await RawConnection.open(broker.host, broker.port)


def _join(member_id: str, correlation: int) -> bytes:
    return codec.encode_request(codec.new_request(
        JOIN, 5, group_id="g", session_timeout_ms=30_000, rebalance_timeout_ms=30_000, member_id=member_id,
        group_instance_id=None, protocol_type="consumer", protocols=[_PROTOCOL(name="range", metadata=METADATA)],
    ), correlation, "c")


def _heartbeat(member_id: str, generation: int, correlation: int, version: int = 4) -> bytes:
    fields: dict[str, Any] = dict(group_id="g", generation_id=generation, member_id=member_id)
    return codec.encode_request(codec.new_request(HEARTBEAT, version, **fields), correlation, "c")


async def _member(conn: RawConnection) -> tuple[str, int]:
    """Join (MEMBER_ID_REQUIRED, then again with the id) and sync: a Stable member of group g."""
    await conn.send_raw(_join("", 1))
    member_id = codec.decode_response(JOIN, 5, await conn.read_frame()).member_id
    await conn.send_raw(_join(member_id, 2))
    joined = codec.decode_response(JOIN, 5, await conn.read_frame())
    assert joined.error_code == ErrorCode.NONE
    synced = await conn.request(SYNC, 3, group_id="g", generation_id=joined.generation_id, member_id=member_id,
                                group_instance_id=None, assignments=[])
    assert synced.error_code == ErrorCode.NONE
    return member_id, joined.generation_id


def _correlation(payload: bytes) -> int:
    return int(struct.unpack_from(">i", payload, 0)[0])


async def _second_member(first: RawConnection, first_id: str, second: RawConnection) -> tuple[int, str]:
    """A second member joins; the first rejoins as its heartbeat says; both sync. (generation, second's id)"""
    await second.send_raw(_join("", 1))
    second_id = codec.decode_response(JOIN, 5, await second.read_frame()).member_id
    await second.send_raw(_join(second_id, 2))  # parked until the first member rejoins
    await first.send_raw(_join(first_id, 3))
    joined = codec.decode_response(JOIN, 5, await first.read_frame())
    codec.decode_response(JOIN, 5, await second.read_frame())
    for conn, member in ((first, first_id), (second, second_id)):
        await conn.send_raw(codec.encode_request(codec.new_request(
            SYNC, 3, group_id="g", generation_id=joined.generation_id, member_id=member, group_instance_id=None,
            assignments=[]), 4, "c"))
    for conn in (first, second):
        assert codec.decode_response(SYNC, 3, await conn.read_frame()).error_code == ErrorCode.NONE
    return joined.generation_id, second_id


async def test_a_heartbeat_arriving_behind_a_parked_join_is_answered_after_it(server: EmulatorServer) -> None:
    first, second = await _connect(server), await _connect(server)
    member_id, _ = await _member(first)
    generation, second_id = await _second_member(first, member_id, second)
    await first.send_raw(_heartbeat(member_id, generation, 10) + _join(member_id, 11))
    answered = await first.read_frame()  # the heartbeat before the join is answered while the join waits
    assert _correlation(answered) == 10
    await first.send_raw(_heartbeat(member_id, generation, 12))  # arrives while the connection's task waits
    await second.send_raw(_join(second_id, 5))  # the rebalance the parked join waits for completes
    assert [_correlation(await first.read_frame()) for _ in range(2)] == [11, 12]  # in request order
    await first.close()
    await second.close()


async def test_heartbeats_beyond_a_turns_time_slice_are_left_to_the_connections_task(
    server: EmulatorServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    conn = await _connect(server)
    member_id, generation = await _member(conn)
    monkeypatch.setattr(server_module, "TURN_S", 0.0)  # a turn ends after the first answer
    used: list[tuple[int, int]] = []
    answer = server._answer_arriving

    def spy(*args: Any) -> int:
        n = answer(*args)
        used.append((n, len(args[-1])))
        return n

    monkeypatch.setattr(server, "_answer_arriving", spy)
    frames = [_heartbeat(member_id, generation, 20 + i, version=i) for i in range(5)]
    await conn.send_raw(b"".join(frames))
    answers = [await conn.read_frame() for _ in frames]
    assert [_correlation(a) for a in answers] == [20, 21, 22, 23, 24]
    assert all(int(struct.unpack_from(">h", a, 4 if v == 0 else 8 + (v == 4))[0]) == ErrorCode.NONE
               for v, a in enumerate(answers))
    assert used and used[0] == (len(frames[0]), sum(map(len, frames)))  # one answered at arrival, 4 left
    await conn.close()


async def test_a_damaged_heartbeat_after_good_ones_closes_the_connection_after_their_answers(
    server: EmulatorServer,
) -> None:
    conn = await _connect(server)
    member_id, generation = await _member(conn)
    good = _heartbeat(member_id, generation, 30)
    damaged = bytearray(_heartbeat(member_id, generation, 31))
    damaged[-3:] = b"\x7f\x7f\x7f"  # member id length runs past the end: the generic codec's verdict
    await conn.send_raw(good + bytes(damaged))
    assert _correlation(await conn.read_frame()) == 30
    assert await conn.is_closed_by_peer()
