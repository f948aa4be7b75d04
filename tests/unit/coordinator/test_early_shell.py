"""The early shell (coordinator/early.py) serves real loopback clients before asyncio's shell exists, then hands
every connection over to it without losing or reordering a byte, an answer or a parked reply (issue 22).

The test drives the early loop itself, one ``turn`` at a time, and decides when "asyncio is ready" (the handoff):
no sleeps, no threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import select
import socket
import struct
from collections.abc import Iterator
from typing import Any

import pytest

from rebalance_lab.config import EmulatorConfig, GroupConfig
from rebalance_lab.coordinator.early import EarlyShell
from rebalance_lab.coordinator.request_core import RequestCore
from rebalance_lab.coordinator.server import EmulatorServer
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode
from tests.support.blocking_frames import read_frame

API_VERSIONS, METADATA, FIND_COORDINATOR, JOIN, HEARTBEAT, SYNC, LEAVE, OFFSET_FETCH = 18, 3, 10, 11, 12, 14, 13, 9
DESCRIBE_CLUSTER = 60
_PROTOCOL = codec.data_class(codec.request_type(JOIN), "JoinGroupRequestProtocol")


def _shell(delay_ms: int = 0) -> EarlyShell:
    config = EmulatorConfig(port=0, group=GroupConfig(initial_rebalance_delay_ms=delay_ms, join_race="separate"))
    return EarlyShell.listening(RequestCore(config))


@pytest.fixture
def shell() -> Iterator[EarlyShell]:
    made = _shell()
    yield made
    made.close()


def _client(shell: EarlyShell) -> socket.socket:
    sock = socket.create_connection(shell.listeners[0][0].getsockname()[:2], timeout=10)
    return sock


def _frame(api_key: int, version: int, correlation: int, **fields: Any) -> bytes:
    return codec.encode_request(codec.new_request(api_key, version, **fields), correlation, "early-test")  # type: ignore[no-any-return]


def _join(member_id: str, correlation: int) -> bytes:
    return _frame(JOIN, 5, correlation, group_id="g", session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
                  member_id=member_id, group_instance_id=None, protocol_type="consumer",
                  protocols=[_PROTOCOL(name="range", metadata=b"")])


def _readable(sock: socket.socket) -> bool:
    return bool(select.select([sock], [], [], 0)[0])


def _turn_until_answered(shell: EarlyShell, sock: socket.socket, turns: int = 200) -> bytes:
    """Turn the early loop (each turn waits for I/O at most 10 ms) until ``sock`` has an answer to read."""
    for _ in range(turns):
        shell.turn(0.01)
        if _readable(sock):
            return read_frame(sock)
    raise AssertionError("the early shell did not answer")


def _call(shell: EarlyShell, sock: socket.socket, api_key: int, version: int, frame: bytes) -> Any:
    sock.sendall(frame)
    return codec.decode_response(api_key, version, _turn_until_answered(shell, sock))


def _correlation(frame: bytes) -> int:
    return int(struct.unpack_from(">i", frame, 0)[0])


def test_a_classic_consumers_first_requests_are_answered_by_the_early_shell(shell: EarlyShell) -> None:
    with _client(shell) as sock:
        versions = _call(shell, sock, API_VERSIONS, 3, _frame(API_VERSIONS, 3, 1, client_software_name="t",
                                                               client_software_version="1"))
        assert versions.error_code == 0 and any(k.api_key == JOIN for k in versions.api_keys)
        metadata = _call(shell, sock, METADATA, 12, _frame(METADATA, 12, 2, topics=None,
                                                           allow_auto_topic_creation=False,
                                                           include_topic_authorized_operations=False))
        assert [b.node_id for b in metadata.brokers] == [0]
        found = _call(shell, sock, FIND_COORDINATOR, 4, _frame(FIND_COORDINATOR, 4, 3, key_type=0,
                                                               coordinator_keys=["g"]))
        assert found.coordinators[0].error_code == 0
        first = _call(shell, sock, JOIN, 5, _join("", 4))
        assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED
        joined = _call(shell, sock, JOIN, 5, _join(first.member_id, 5))
        assert (joined.error_code, joined.generation_id, joined.leader) == (0, 1, first.member_id)
        synced = _call(shell, sock, SYNC, 3, _frame(SYNC, 3, 6, group_id="g", generation_id=1,
                                                    member_id=first.member_id, group_instance_id=None,
                                                    assignments=[]))
        assert synced.error_code == 0
        beat = _call(shell, sock, HEARTBEAT, 3, _frame(HEARTBEAT, 3, 7, group_id="g", generation_id=1,
                                                       member_id=first.member_id, group_instance_id=None))
        assert beat.error_code == 0
        offsets = _call(shell, sock, OFFSET_FETCH, 7, _frame(OFFSET_FETCH, 7, 8, group_id="g", topics=None,
                                                             require_stable=False))
        assert offsets.error_code == 0
    assert shell.answered == 8


def test_the_initial_rebalance_delay_ends_in_the_early_loop_by_its_own_timer() -> None:
    shell = _shell(delay_ms=50)
    try:
        with _client(shell) as sock:
            first = _call(shell, sock, JOIN, 5, _join("", 1))
            sock.sendall(_join(first.member_id, 2))
            shell.turn(0)  # the JoinGroup parks: nothing to read until the delay's timer fires
            assert not _readable(sock)
            joined = codec.decode_response(JOIN, 5, _turn_until_answered(shell, sock))
            assert (joined.error_code, joined.generation_id) == (0, 1)
    finally:
        shell.close()


def test_a_join_group_parked_at_the_handoff_is_answered_after_it_and_its_connection_goes_on() -> None:
    shell = _shell(delay_ms=200)
    sock = _client(shell)
    first = _call(shell, sock, JOIN, 5, _join("", 1))
    # the join that waits for the initial delay, and a heartbeat pipelined behind it
    sock.sendall(_join(first.member_id, 2) + _frame(HEARTBEAT, 3, 3, group_id="g", generation_id=1,
                                                    member_id=first.member_id, group_instance_id=None))
    for _ in range(3):
        shell.turn(0)
    assert not _readable(sock)

    async def asyncio_ready() -> list[bytes]:
        server = EmulatorServer.taking_over(shell)
        await server.take_over(shell)
        try:
            return await asyncio.to_thread(lambda: [read_frame(sock), read_frame(sock)])
        finally:
            await server.stop()

    with sock:
        joined, beat = asyncio.run(asyncio_ready())
    assert (codec.decode_response(JOIN, 5, joined).generation_id, _correlation(joined)) == (1, 2)
    assert (codec.decode_response(HEARTBEAT, 3, beat).error_code, _correlation(beat)) == (0, 3)
    assert shell.connections == {}


def test_pipelined_bytes_behind_a_request_the_early_shell_leaves_are_served_in_order_after_the_handoff(
        shell: EarlyShell) -> None:
    def versions(correlation: int) -> bytes:
        return _frame(API_VERSIONS, 3, correlation, client_software_name="t", client_software_version="1")

    cut = versions(4)
    sock = _client(shell)
    # an ApiVersions, a DescribeCluster (left for the asyncio shell), an ApiVersions and half of one more
    sock.sendall(versions(1) + _frame(DESCRIBE_CLUSTER, 0, 2, include_cluster_authorized_operations=False)
                 + versions(3) + cut[:7])
    assert _correlation(_turn_until_answered(shell, sock)) == 1
    for _ in range(3):
        shell.turn(0)
    assert not _readable(sock)  # nothing after the request it leaves

    async def asyncio_ready() -> list[int]:
        server = EmulatorServer.taking_over(shell)
        await server.take_over(shell)
        try:
            sock.sendall(cut[7:])
            frames = await asyncio.to_thread(lambda: [read_frame(sock) for _ in range(3)])
            return [_correlation(frame) for frame in frames]
        finally:
            await server.stop()

    with sock:
        assert asyncio.run(asyncio_ready()) == [2, 3, 4]


def test_a_connection_closed_in_the_early_phase_is_gone_and_not_taken_over(shell: EarlyShell) -> None:
    sock = _client(shell)
    sock.sendall(b"\x00\x00\x00\x40half")
    shell.turn(0.01)
    assert len(shell.connections) == 1
    sock.close()
    for _ in range(5):
        shell.turn(0.01)
    assert shell.connections == {}
    assert shell.hand_over(lambda _conn: None) == []


def test_a_malformed_frame_closes_only_its_own_connection_in_the_early_phase(shell: EarlyShell) -> None:
    with _client(shell) as bad, _client(shell) as good:
        bad.sendall(struct.pack(">i", -5))
        for _ in range(5):
            shell.turn(0.01)
        assert bad.recv(10) == b""  # closed, as Kafka closes a channel with an invalid size
        beat = _call(shell, good, API_VERSIONS, 0, _frame(API_VERSIONS, 0, 9))
        assert beat.error_code == 0


def test_new_connections_after_the_handoff_are_served_by_the_asyncio_shell_with_fresh_ids(
        shell: EarlyShell) -> None:
    early = _client(shell)
    _call(shell, early, API_VERSIONS, 0, _frame(API_VERSIONS, 0, 1))

    async def asyncio_ready() -> tuple[int, int]:
        server = EmulatorServer.taking_over(shell)
        await server.take_over(shell)
        try:
            late = _client(shell)

            def both() -> tuple[int, int]:
                late.sendall(_frame(API_VERSIONS, 0, 2))
                early.sendall(_frame(API_VERSIONS, 0, 3))
                return _correlation(read_frame(late)), _correlation(read_frame(early))

            with late:
                answers = await asyncio.to_thread(both)
                assert len(set(server._connections)) == 2  # the early connection kept its id; the new one another
            return answers
        finally:
            await server.stop()

    with early:
        assert asyncio.run(asyncio_ready()) == (2, 3)


def test_serves_early_phase_answers_while_its_import_thread_runs_and_leaves_nothing_behind() -> None:
    """EarlyServe.run: the early loop answers a request sent from inside the import thread's work (so while it
    runs), ends when that work is done, and restores the switch interval and sys.meta_path (the finder that makes
    the import thread wait while the loop serves is gone)."""
    import signal
    import sys

    from rebalance_lab.coordinator.early_serve import EarlyServe

    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    interval = sys.getswitchinterval()
    try:
        early = EarlyServe(EmulatorConfig(port=0))
        seen: list[object] = []

        def import_rest() -> None:
            seen.append(any(type(f).__name__ == "_YieldToRequests" for f in sys.meta_path))
            seen.append(sys.getswitchinterval())
            with _client(early.shell) as sock:
                sock.sendall(_frame(API_VERSIONS, 0, 41))
                seen.append(_correlation(read_frame(sock)))

        assert early.run(import_rest) is True
        early.close()
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    assert seen == [True, 0.001, 41]
    assert early.shell.answered == 1
    assert sys.getswitchinterval() == interval
    assert not any(type(f).__name__ == "_YieldToRequests" for f in sys.meta_path)


def test_a_peer_that_leaves_its_answers_unread_is_not_read_past_the_high_water_mark(shell: EarlyShell) -> None:
    """As the asyncio shell (connection.py's WRITE_HIGH_WATER): once 256 KiB of answers wait, the early shell
    stops taking that peer's requests; they are all answered, in order, once it reads."""
    count = 20_000
    frames = b"".join(_frame(API_VERSIONS, 3, i, client_software_name="t", client_software_version="1")
                      for i in range(count))
    sock = _client(shell)
    sock.setblocking(False)
    sent = 0
    for _ in range(2_000):
        with contextlib.suppress(BlockingIOError):
            sent += sock.send(frames[sent:sent + 65_536])
        shell.turn(0)
    (conn,) = shell.connections.values()
    assert 256 * 1024 < len(conn.unsent) < 256 * 1024 + 2 * 1024  # one answer past the mark at most
    last, buffer = -1, bytearray()
    while last < count - 1:
        with contextlib.suppress(BlockingIOError):
            sent += sock.send(frames[sent:sent + 65_536]) if sent < len(frames) else 0
        shell.turn(0)
        with contextlib.suppress(BlockingIOError):
            buffer += sock.recv(1 << 20)
        while len(buffer) >= 4 and len(buffer) >= 4 + (size := struct.unpack_from(">i", buffer)[0]):
            correlation = _correlation(bytes(buffer[4:4 + size]))
            assert correlation == last + 1
            last = correlation
            del buffer[:4 + size]
    sock.close()


def _early_serve() -> Any:
    from rebalance_lab.coordinator.early_serve import EarlyServe

    return EarlyServe(EmulatorConfig(port=0, group=GroupConfig(initial_rebalance_delay_ms=0, join_race="separate")))


@contextlib.contextmanager
def _own_signal_handlers() -> Iterator[None]:
    import signal

    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)


def test_serves_import_thread_starts_only_once_the_early_loop_has_answered_what_was_sent_and_is_idle() -> None:
    """A client's first requests have the interpreter to themselves: requests sent before EarlyServe.run are all
    answered before the import thread starts (early_serve._IDLE_S), and the JoinGroup sent after them too."""
    import threading

    with _own_signal_handlers():
        early = _early_serve()
        with _client(early.shell) as sock:
            sock.sendall(_frame(API_VERSIONS, 3, 1, client_software_name="t", client_software_version="1")
                         + _frame(FIND_COORDINATOR, 3, 2, key="g", key_type=0) + _join("", 3))
            seen: list[int] = []

            def import_rest() -> None:
                seen.append(early.shell.answered)

            def rejoin() -> None:  # the second JoinGroup, with the id the first answer gave
                answers = [read_frame(sock) for _ in range(3)]
                member = codec.decode_response(JOIN, 5, answers[2]).member_id
                sock.sendall(_join(member, 4))

            client = threading.Thread(target=rejoin)
            client.start()
            assert early.run(import_rest) is True
            client.join()
            joined = codec.decode_response(JOIN, 5, read_frame(sock))
        early.close()
    assert joined.generation_id == 1
    # the three sent before run answered before the thread ran (and the rejoin too, unless this machine took more
    # than _IDLE_S to send it)
    assert len(seen) == 1 and seen[0] >= 3


def test_serves_import_thread_starts_without_a_client_and_a_stop_before_it_starts_ends_the_early_phase() -> None:
    import os
    import signal

    with _own_signal_handlers():
        early = _early_serve()
        ran: list[bool] = []
        assert early.run(lambda: ran.append(True)) is True  # idle from the start: the thread runs _IDLE_S later
        early.close()
        assert ran == [True]
        stopped = _early_serve()
        os.kill(os.getpid(), signal.SIGTERM)  # its handler: a stop requested, the loop woken
        assert stopped.run(lambda: ran.append(False)) is False
        stopped.close()
    assert ran == [True]
