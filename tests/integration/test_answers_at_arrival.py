"""Heartbeats answered as their bytes arrive (issue 22) keep a connection's order, its turn and its verdicts.

The shell answers a heartbeat in the callback that receives it while the connection's task waits with nothing
half-received (coordinator/connection.py ArrivingReader); everything else, and whatever follows it, is the
task's. These tests pipeline requests in one write and check what comes back.
"""

from __future__ import annotations

import asyncio
import errno
import os
import socket
import struct
from collections.abc import AsyncIterator
from typing import Any

import pytest

from rebalance_lab.config import EmulatorConfig, GroupConfig
from rebalance_lab.coordinator import arrival
from rebalance_lab.coordinator import server as server_module
from rebalance_lab.coordinator.server import EmulatorServer
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.assignment_types import Subscription
from rebalance_lab.protocol.consumer_protocol import encode_subscription
from rebalance_lab.protocol.errors import ErrorCode
from tests.integration.wire import RawConnection
from tests.support.compiled_build import require_build

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
    used: list[tuple[int, int]] = []
    answer = server._answer_arriving

    def spy(*args: Any) -> int:
        n = answer(*args)
        used.append((n, len(args[-1])))
        return n

    monkeypatch.setattr(server, "_answer_arriving", spy)  # before the connection: bound as it is made
    conn = await _connect(server)
    member_id, generation = await _member(conn)
    monkeypatch.setattr(arrival, "TURN_S", 0.0)  # a turn ends after the first answer
    used.clear()
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


# -- JoinGroup and SyncGroup taken at arrival: a parked answer is written by the callback that resolves it ---------


def _error(payload: bytes) -> int:
    """The error code of a JoinGroup v5 / SyncGroup v3 / Heartbeat v3 answer: correlation id, throttle, error."""
    return int(struct.unpack_from(">h", payload, 8)[0])


async def _stable_pair(server: EmulatorServer) -> tuple[RawConnection, str, RawConnection, str, int]:
    """Two Stable members of group g, each on its own connection; the first leads. (first, id, second, id, gen)"""
    first, second = await _connect(server), await _connect(server)
    first_id, _ = await _member(first)
    generation, second_id = await _second_member(first, first_id, second)
    return first, first_id, second, second_id, generation


async def _nothing_within(conn: RawConnection, seconds: float) -> bool:
    try:
        await conn.read_frame(timeout=seconds)
    except TimeoutError:
        return True
    return False


async def test_a_rebalances_joins_and_syncs_never_wake_the_connections_task(
    server: EmulatorServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    taken_by_task: list[int] = []
    process = server._process

    async def spy(cid: int, node: Any, host: str, payload: bytes) -> bytes | None:
        taken_by_task.append(int(struct.unpack_from(">h", payload, 0)[0]))
        return await process(cid, node, host, payload)

    monkeypatch.setattr(server, "_process", spy)
    first, first_id, second, second_id, generation = await _stable_pair(server)
    await first.send_raw(_join(first_id, 20))  # the leader rejoins: parked until the second member rejoins
    await second.send_raw(_join(second_id, 21))
    joined = [await conn.read_frame() for conn in (first, second)]
    assert [_error(p) for p in joined] == [ErrorCode.NONE] * 2
    assert codec.decode_response(JOIN, 5, joined[0]).generation_id == generation + 1
    assert JOIN not in taken_by_task and SYNC not in taken_by_task
    await first.close()
    await second.close()


async def test_requests_pipelined_behind_a_parked_join_wait_for_its_answer_and_keep_their_order(
    server: EmulatorServer,
) -> None:
    first, first_id, second, second_id, generation = await _stable_pair(server)
    await first.send_raw(_join(first_id, 30) + _heartbeat(first_id, generation, 31, version=3))
    await first.send_raw(_heartbeat(first_id, generation, 32, version=3))  # arrives while the join is parked
    assert await _nothing_within(first, 0.2)  # the heartbeats behind the parked join are not answered before it
    await second.send_raw(_join(second_id, 40))
    answers = [await first.read_frame() for _ in range(3)]
    assert [_correlation(a) for a in answers] == [30, 31, 32]
    # taken after the join completed the next generation: their generation is the previous one
    assert [_error(a) for a in answers] == [ErrorCode.NONE, ErrorCode.ILLEGAL_GENERATION, ErrorCode.ILLEGAL_GENERATION]
    assert _correlation(await second.read_frame()) == 40
    await first.send_raw(_heartbeat(first_id, generation, 33, version=3))  # the connection carries on
    assert _correlation(await first.read_frame()) == 33
    await first.close()
    await second.close()


async def test_a_peer_that_stops_sending_while_its_join_is_parked_still_gets_the_answer_then_the_close(
    server: EmulatorServer,
) -> None:
    first, first_id, second, second_id, _ = await _stable_pair(server)
    await first.send_raw(_join(first_id, 50))
    first.writer.write_eof()  # the end of its stream arrives while the join waits
    assert await _nothing_within(first, 0.1)
    await second.send_raw(_join(second_id, 51))
    answer = await first.read_frame()
    assert (_correlation(answer), _error(answer)) == (50, ErrorCode.NONE)
    assert await first.is_closed_by_peer()
    await first.close()
    await second.close()


async def test_a_connection_closed_while_its_join_is_parked_is_forgotten_when_the_group_moves_on(
    server: EmulatorServer,
) -> None:
    first, first_id, second, second_id, _ = await _stable_pair(server)
    before = set(server._connections)
    await first.send_raw(_join(first_id, 60))
    await _until(lambda: len(_parked(server)) == 1)
    await first.close()
    await second.send_raw(_join(second_id, 61))  # completes the join: the closed connection's answer has no reader
    assert _error(await second.read_frame()) == ErrorCode.NONE
    await _until(lambda: len(server._connections) == len(before) - 1)
    assert set(server._idle._last) == set(server._connections)  # no idle entry left behind for the closed one
    await second.send_raw(_heartbeat(second_id, 0, 62, version=3))  # the server keeps serving
    assert _correlation(await second.read_frame()) == 62
    await second.close()


def _parked(server: EmulatorServer) -> list[int]:
    return [cid for cid in server._connections if cid in server._idle._in_flight]


async def _until(condition: Any, seconds: float = 5.0) -> None:
    for _ in range(int(seconds / 0.01)):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the condition did not hold in time")


async def test_a_parked_join_is_in_flight_so_the_idle_sweep_leaves_its_connection_open() -> None:
    group = GroupConfig(initial_rebalance_delay_ms=0, join_race="separate")
    config = EmulatorConfig(port=0, topics=(("t", 2),), group=group, connections_max_idle_ms=200)
    async with EmulatorServer(config) as server:
        first, first_id, second, second_id, _ = await _stable_pair(server)
        await first.send_raw(_join(first_id, 70))
        assert await second.is_closed_by_peer(timeout=3.0)  # idle: closed by the sweep
        third = await _connect(server)  # the second member rejoins on a new connection
        await third.send_raw(_join(second_id, 71))
        answer = await first.read_frame()
        assert (_correlation(answer), _error(answer)) == (70, ErrorCode.NONE)  # the parked one stayed open
        assert _error(await third.read_frame()) == ErrorCode.NONE
        await first.close()
        await third.close()


async def test_a_join_parked_for_the_initial_delay_is_answered_when_its_timer_fires() -> None:
    group = GroupConfig(initial_rebalance_delay_ms=150, join_race="separate")
    async with EmulatorServer(EmulatorConfig(port=0, topics=(("t", 2),), group=group)) as server:
        conn = await _connect(server)
        await conn.send_raw(_join("", 1))
        member_id = codec.decode_response(JOIN, 5, await conn.read_frame()).member_id
        await conn.send_raw(_join(member_id, 2) + _heartbeat(member_id, 0, 3, version=3))
        assert await _nothing_within(conn, 0.05)  # the delay holds the join (and the heartbeat behind it)
        joined = await conn.read_frame()
        assert (_correlation(joined), _error(joined)) == (2, ErrorCode.NONE)
        assert _correlation(await conn.read_frame()) == 3
        await conn.close()


async def test_a_leaders_big_parked_answer_is_encoded_in_the_codec_thread_and_keeps_its_place(
    server: EmulatorServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    def large(body: Any) -> bool:
        return len(getattr(body, "members", ())) > 1

    monkeypatch.setattr(arrival, "is_large", large)  # the arrival path hands it to the task ...
    monkeypatch.setattr(server_module, "is_large", large)  # ... which encodes it in the codec thread
    first, first_id, second, second_id, generation = await _stable_pair(server)
    await first.send_raw(_join(first_id, 80) + _heartbeat(first_id, generation, 81, version=3))
    await second.send_raw(_join(second_id, 82))
    joined = await first.read_frame()
    assert _correlation(joined) == 80
    assert len(codec.decode_response(JOIN, 5, joined).members) == 2  # the leader's list, from the codec thread
    assert server._codec_pool is not None
    assert _correlation(await first.read_frame()) == 81
    await first.close()
    await second.close()


async def test_a_join_taken_at_arrival_is_handled_after_the_callbacks_already_queued_as_the_task_was(
    server: EmulatorServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The join race's fitted timing (coordinator/join_race.py) counts a JoinGroup as handled on the loop turn after
    its bytes arrive (when the woken task ran), not inside the callback that received them."""
    conn = await _connect(server)
    member_id, _ = await _member(conn)
    order: list[str] = []
    loop = asyncio.get_running_loop()
    spec = server._handlers[JOIN]
    handle = spec.handle

    def observed(api_key: int, _version: int, _client: str) -> None:
        if api_key == JOIN:
            loop.call_soon(order.append, "a callback queued when its bytes arrived")

    def handled(ctx: Any, request: Any) -> Any:
        order.append("the join handled")
        return handle(ctx, request)

    server.add_request_observer(observed)
    monkeypatch.setattr(spec, "_handle", handled)  # the loaded handler (HandlerSpec.handle reads it)
    await conn.send_raw(_join(member_id, 90))
    assert _correlation(await conn.read_frame()) == 90
    assert order == ["a callback queued when its bytes arrived", "the join handled"]
    await conn.close()


async def test_join_and_sync_answers_go_through_the_network_thread_and_their_connections_carry_on_in_order(
    server: EmulatorServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_build()  # the sender's C extension (coordinator/sender.py); ./dev test builds it
    sender = server._sender
    assert sender is not None
    offered: list[int] = []
    offer = sender.offer
    monkeypatch.setattr(sender, "offer", lambda fd, answer, done: offered.append(fd) or offer(fd, answer, done))
    first, first_id, second, second_id, generation = await _stable_pair(server)
    offered.clear()
    await first.send_raw(_join(first_id, 80) + _heartbeat(first_id, generation, 81, version=3))
    await _until(lambda: len(_parked(server)) == 1)
    await second.send_raw(_join(second_id, 82))  # completes the join: the first member's parked answer is sent
    assert [_correlation(await first.read_frame()) for _ in range(2)] == [80, 81]
    assert _correlation(await second.read_frame()) == 82
    assert len(offered) == 2  # the parked one, and the second's, answered on the next turn after its arrival
    await first.send_raw(_heartbeat(first_id, generation, 83, version=3))
    assert _correlation(await first.read_frame()) == 83
    await first.close()
    await second.close()


class _Partial:
    """A network thread whose sends leave part of each answer (``part``) or none of it (``none``: EAGAIN)."""

    def __init__(self, outcome: str, wake_fd: int) -> None:
        self.outcome, self.wake_fd = outcome, wake_fd
        self.items: list[tuple[int, bytes, int]] = []
        self.finished: list[tuple[int, int]] = []

    def submit(self, fd: int, answer: bytes, token: int) -> None:
        self.items.append((os.dup(fd), answer, token))

    def forget(self, fd: int) -> None:
        pass

    def flush(self) -> None:
        for fd, answer, token in self.items:
            self.finished.append((token, os.write(fd, answer[:5]) if self.outcome == "part" else -errno.EAGAIN))
            os.close(fd)
        self.items.clear()
        os.write(self.wake_fd, b"w")

    def take(self) -> list[tuple[int, int]]:
        finished, self.finished = self.finished, []
        return finished

    def close(self) -> None:
        pass


@pytest.mark.parametrize("outcome", ["part", "none"])
async def test_a_parked_answer_the_sender_did_not_finish_is_finished_by_the_transport(
    server: EmulatorServer, monkeypatch: pytest.MonkeyPatch, outcome: str
) -> None:
    require_build()
    sender = server._sender
    assert sender is not None
    first, first_id, second, second_id, generation = await _stable_pair(server)
    monkeypatch.setattr(sender, "_worker", _Partial(outcome, sender._pipe.write_fd))
    await first.send_raw(_join(first_id, 90))
    await _until(lambda: len(_parked(server)) == 1)
    await second.send_raw(_join(second_id, 91))
    assert _correlation(await second.read_frame()) == 91
    answer = await first.read_frame()
    assert (_correlation(answer), _error(answer)) == (90, ErrorCode.NONE)
    assert codec.decode_response(JOIN, 5, answer).generation_id == generation + 1
    await first.send_raw(_heartbeat(first_id, generation + 1, 92, version=3))
    assert _correlation(await first.read_frame()) == 92
    await first.close()
    await second.close()


class _Forgetting:
    """The sender's worker, each forget(fd) told to ``seen`` first (the protocols hold the sender's bound method)."""

    def __init__(self, real: Any, seen: Any) -> None:
        self.real, self.seen = real, seen

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def forget(self, fd: int) -> None:
        self.seen(fd)
        self.real.forget(fd)


async def test_a_lost_connection_leaves_both_network_threads_before_its_socket_is_closed(
    server: EmulatorServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_build()  # the network threads' C extensions (coordinator/receiver.py, sender.py)
    sender, receiver = server._sender, server._receiver
    assert sender is not None and receiver is not None
    seen: list[tuple[str, bool]] = []  # (which, whether the descriptor was still open then)
    unwatch = receiver.unwatch
    fds: dict[int, int] = {}  # the receiver's token -> the socket's descriptor
    watch = receiver.watch

    def watching(stream: Any, protocol: Any, transport: Any) -> int | None:
        token = watch(stream, protocol, transport)
        if token is not None:
            fds[token] = transport.get_extra_info("socket").fileno()
        return token

    def is_open(fd: int) -> bool:
        try:
            os.fstat(fd)
        except OSError:
            return False
        return True

    monkeypatch.setattr(receiver, "watch", watching)
    monkeypatch.setattr(receiver, "unwatch", lambda token: seen.append(("receiver", is_open(fds[token])))
                        or unwatch(token))
    monkeypatch.setattr(sender, "_worker", _Forgetting(sender._worker, lambda fd: seen.append(("sender", is_open(fd)))))
    conn = await _connect(server)
    await _member(conn)
    assert len(fds) == 1 and receiver.watched == 1  # a plaintext connection is read by the receiver's thread
    fd = next(iter(fds.values()))
    await conn.close()
    await _until(lambda: not server._connections and not is_open(fd))
    assert seen == [("receiver", True), ("sender", True)]
    assert receiver.watched == 0


async def test_a_peer_that_resets_its_connection_is_dropped_and_the_others_are_served(server: EmulatorServer) -> None:
    require_build()
    receiver = server._receiver
    assert receiver is not None
    reset, other = await _connect(server), await _connect(server)
    await reset.send_raw(_heartbeat("nobody", 1, 69, version=3))
    assert _error(await reset.read_frame()) == ErrorCode.UNKNOWN_MEMBER_ID  # read by the thread, answered
    assert receiver.watched == 2
    sock = reset.writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close() sends a RST
    reset.writer.transport.abort()
    await _until(lambda: receiver.watched == 1 and len(server._connections) == 1)
    member_id, generation = await _member(other)
    await other.send_raw(_heartbeat(member_id, generation, 70))
    assert _correlation(await other.read_frame()) == 70
    await other.close()


async def test_a_request_bigger_than_what_the_thread_reads_ahead_is_read_whole_through_its_pauses(
    server: EmulatorServer
) -> None:
    require_build()
    receiver = server._receiver
    assert receiver is not None
    conn = await _connect(server)
    big = b"m" * (3 * (1 << 20))  # over the connection cap and the stream reader's limit: paused and resumed
    request = codec.encode_request(codec.new_request(
        JOIN, 5, group_id="g", session_timeout_ms=30_000, rebalance_timeout_ms=30_000, member_id="",
        group_instance_id=None, protocol_type="consumer", protocols=[_PROTOCOL(name="range", metadata=big)],
    ), 1, "c")
    await conn.send_raw(request + _heartbeat("nobody", 1, 2))
    answer = await conn.read_frame()
    assert _correlation(answer) == 1 and _error(answer) == ErrorCode.MEMBER_ID_REQUIRED
    assert _correlation(await conn.read_frame()) == 2  # the bytes behind it, in order
    assert receiver.watched == 1
    await conn.close()
