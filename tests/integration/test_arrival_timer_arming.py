"""Heartbeats answered at arrival share one re-arm of the shell's timer per loop turn, and timers still fire.

The shell keeps one timer handle at the earliest deadline of every component (server.py). It used to ask the
world for that deadline after every heartbeat answered at arrival (~6% of a heartbeat's server CPU with 2,000
members, issue 22); now the heartbeats answered in one loop turn share one re-arm on the loop's next turn.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from rebalance_lab.config import EmulatorConfig, GroupConfig
from rebalance_lab.coordinator.group_service import service_of
from rebalance_lab.coordinator.server import EmulatorServer
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.assignment_types import Subscription
from rebalance_lab.protocol.consumer_protocol import encode_subscription
from rebalance_lab.protocol.errors import ErrorCode
from tests.integration.wire import RawConnection

JOIN, HEARTBEAT, SYNC = 11, 12, 14
_PROTOCOL = codec.data_class(codec.request_type(JOIN), "JoinGroupRequestProtocol")
METADATA = encode_subscription(Subscription(topics=("t",)))
SHORT_SESSION_MS = 400


@pytest.fixture
async def server() -> AsyncIterator[EmulatorServer]:
    group = GroupConfig(initial_rebalance_delay_ms=0, join_race="separate", min_session_timeout_ms=100)
    config = EmulatorConfig(port=0, topics=(("t", 2),), group=group)
    async with EmulatorServer(config) as emulator:
        yield emulator


def _join(group: str, member_id: str, session_ms: int) -> Any:
    return dict(group_id=group, session_timeout_ms=session_ms, rebalance_timeout_ms=30_000, member_id=member_id,
                group_instance_id=None, protocol_type="consumer",
                protocols=[_PROTOCOL(name="range", metadata=METADATA)])


async def _alone_in(server: EmulatorServer, group: str, session_ms: int = 30_000) -> tuple[RawConnection, bytes]:
    """A connection whose member is alone and Stable in ``group``, and its heartbeat frame."""
    broker = server.world.cluster.brokers[0]
    conn = await RawConnection.open(broker.host, broker.port)
    member_id = (await conn.request(JOIN, 5, **_join(group, "", session_ms))).member_id
    joined = await conn.request(JOIN, 5, **_join(group, member_id, session_ms))
    assert joined.error_code == ErrorCode.NONE
    synced = await conn.request(SYNC, 3, group_id=group, generation_id=joined.generation_id, member_id=member_id,
                                group_instance_id=None, assignments=[])
    assert synced.error_code == ErrorCode.NONE
    heartbeat = codec.new_request(HEARTBEAT, 3, group_id=group, generation_id=joined.generation_id,
                                  member_id=member_id, group_instance_id=None)
    return conn, codec.encode_request(heartbeat, 100, "c")


def _error(payload: bytes) -> int:
    return int.from_bytes(payload[8:10], "big", signed=True)  # v3: correlation id, throttle time, error code


async def test_heartbeats_answered_at_arrival_in_one_loop_turn_ask_for_the_next_deadline_once(
        server: EmulatorServer, monkeypatch: pytest.MonkeyPatch) -> None:
    members = [await _alone_in(server, f"g{i}") for i in range(6)]
    await asyncio.sleep(0.05)  # the joins' own re-arms are done
    asked: list[int] = []
    deadline_bound = server.world.deadline_bound
    monkeypatch.setattr(server.world, "deadline_bound", lambda: asked.append(1) or deadline_bound())
    for conn, frame in members:  # six writes without yielding: the server reads all six in one loop turn
        conn.writer.write(frame)
    answers = [await conn.read_frame() for conn, _ in members]
    await asyncio.sleep(0)  # the loop turns once more: the re-arm runs
    assert [_error(a) for a in answers] == [ErrorCode.NONE] * 6
    assert 1 <= len(asked) <= 2  # one per heartbeat (6) before


async def test_a_silent_member_expires_on_time_while_others_are_answered_at_arrival(server: EmulatorServer) -> None:
    silent, silent_frame = await _alone_in(server, "quiet", SHORT_SESSION_MS)
    busy = [await _alone_in(server, f"busy{i}") for i in range(3)]
    started = time.monotonic()
    while time.monotonic() - started < 3 * SHORT_SESSION_MS / 1000:  # the others keep beating meanwhile
        for conn, frame in busy:
            conn.writer.write(frame)
        assert [_error(await conn.read_frame()) for conn, _ in busy] == [ErrorCode.NONE] * 3
        await asyncio.sleep(0.01)
    group = service_of(server.world).coordinator.group("quiet")
    assert group is not None and group.state == "Empty"  # its member expired after its session
    silent.writer.write(silent_frame)
    assert _error(await silent.read_frame()) == ErrorCode.UNKNOWN_MEMBER_ID
