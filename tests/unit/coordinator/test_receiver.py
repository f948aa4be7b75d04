"""The receiver's thread (coordinator/receiver.py, _receive_many.c): sockets read beside the event loop (issue 22).

It needs the C extension of the compiled build (./dev test builds it; without one these fail in CI and skip
elsewhere, as the other compiled-build tests do). What the server does with it is in
tests/integration/test_answers_at_arrival.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import select
import socket
import struct
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from rebalance_lab import native
from rebalance_lab.coordinator.receiver import Receiver
from tests.support.compiled_build import require_build
from tests.unit.coordinator.conftest import SocketPairs

NAME = "rebalance_lab.coordinator._receive_many"


class _Thread:
    """A Reader on its own wake pipe; ``chunks`` waits for what it read."""

    def __init__(self, connection_cap: int = 1 << 20, total_cap: int = 64 << 20) -> None:
        require_build()
        module = native.native(NAME)
        assert module is not None, "the build has no fresh _receive_many (python -m rebalance_lab.compiled build)"
        self.wake, self.wake_w = os.pipe()
        os.set_blocking(self.wake, False)
        self.reader = module.Reader(self.wake_w, connection_cap, total_cap)

    def chunks(self, until: Callable[[list[tuple[int, Any]]], bool], seconds: float = 5.0) -> list[tuple[int, Any]]:
        got: list[tuple[int, Any]] = []
        deadline = time.monotonic() + seconds
        while not until(got) and time.monotonic() < deadline:
            select.select([self.wake], [], [], 0.05)
            with contextlib.suppress(BlockingIOError):
                os.read(self.wake, 100)
            got += self.reader.take()
        return got

    def close(self) -> None:
        self.reader.close()
        os.close(self.wake)
        os.close(self.wake_w)


@pytest.fixture
def thread() -> Iterator[_Thread]:
    made = _Thread()
    yield made
    made.close()


def _joined(chunks: list[tuple[int, Any]], token: int) -> bytes:
    return b"".join(chunk for t, chunk in chunks if t == token and isinstance(chunk, bytes))


def test_each_connection_is_read_in_order_and_the_loop_is_woken_once_per_batch(
        thread: _Thread, pairs: SocketPairs) -> None:
    made = [pairs.make() for _ in range(20)]
    tokens = [thread.reader.watch(ours.fileno()) for ours, _ in made]
    assert len(set(tokens)) == 20
    for round_ in range(3):
        for i, (_, peer) in enumerate(made):
            peer.sendall(f"[{i}:{round_}]".encode())
    expected = {token: "".join(f"[{i}:{r}]" for r in range(3)).encode() for i, token in enumerate(tokens)}
    got = thread.chunks(lambda got: all(_joined(got, t) == expected[t] for t in tokens))
    assert {t: _joined(got, t) for t in tokens} == expected
    assert thread.reader.take() == []  # nothing twice


def test_the_end_of_a_stream_and_a_reset_are_told_once_and_the_socket_is_read_no_more(
        thread: _Thread, pairs: SocketPairs) -> None:
    ours, peer = pairs.make()
    ended = thread.reader.watch(ours.fileno())
    peer.sendall(b"last words")
    peer.shutdown(socket.SHUT_WR)
    got = thread.chunks(lambda got: (ended, 0) in got)
    assert got == [(ended, b"last words"), (ended, 0)]
    listener = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(listener.getsockname())
    server_side, _ = listener.accept()
    listener.close()
    try:
        reset = thread.reader.watch(server_side.fileno())
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        client.close()  # a RST
        assert thread.chunks(lambda got: bool(got)) == [(reset, -errno.ECONNRESET)]
        assert thread.chunks(lambda got: False, seconds=0.2) == []  # not told again: out of the epoll set
    finally:
        server_side.close()


def test_a_paused_connection_is_not_read_until_resumed(
        thread: _Thread, pairs: SocketPairs) -> None:
    (ours, peer), (other, other_peer) = pairs.make(), pairs.make()
    paused, going = thread.reader.watch(ours.fileno()), thread.reader.watch(other.fileno())
    thread.reader.pause(paused)
    peer.sendall(b"held back")
    other_peer.sendall(b"goes on")
    assert thread.chunks(lambda got: False, seconds=0.3) == [(going, b"goes on")]
    peer.shutdown(socket.SHUT_WR)  # a hang-up comes whatever the events asked: still not read while paused
    assert thread.chunks(lambda got: False, seconds=0.3) == []
    thread.reader.resume(paused)
    assert thread.chunks(lambda got: (paused, 0) in got) == [(paused, b"held back"), (paused, 0)]


def test_what_is_read_and_not_yet_taken_is_bounded_per_connection_and_in_all(
        pairs: SocketPairs) -> None:
    capped = _Thread(connection_cap=4, total_cap=1 << 20)
    try:
        ours, peer = pairs.make()
        token = capped.reader.watch(ours.fileno())
        peer.sendall(b"first")
        select.select([capped.wake], [], [], 5)
        time.sleep(0.1)
        peer.sendall(b"second")
        time.sleep(0.2)  # not read: "first" (5 bytes, over the cap of 4) is not yet taken
        assert capped.reader.take() == [(token, b"first")]
        assert capped.chunks(lambda got: bool(got)) == [(token, b"second")]  # taken: read again
    finally:
        capped.close()
    waiting = _Thread(connection_cap=1 << 20, total_cap=4)
    try:
        (one, one_peer), (two, two_peer) = pairs.make(), pairs.make()
        first, second = waiting.reader.watch(one.fileno()), waiting.reader.watch(two.fileno())
        one_peer.sendall(b"12345")
        select.select([waiting.wake], [], [], 5)
        time.sleep(0.1)
        two_peer.sendall(b"67890")
        time.sleep(0.2)  # the thread waits: 5 bytes not yet taken in all, over the total cap of 4
        assert waiting.reader.take() == [(first, b"12345")]
        assert waiting.chunks(lambda got: bool(got)) == [(second, b"67890")]
    finally:
        waiting.close()


def test_each_chunk_counts_its_bookkeeping_so_a_peer_sending_byte_by_byte_is_bounded_too(
        pairs: SocketPairs) -> None:
    capped = _Thread(connection_cap=100, total_cap=1 << 20)  # two chunks of one byte: 2 + 2 x 64 (CHUNK_COST)
    try:
        ours, peer = pairs.make()
        token = capped.reader.watch(ours.fileno())
        for byte in (b"a", b"b"):
            peer.sendall(byte)
            select.select([capped.wake], [], [], 5)
            time.sleep(0.1)  # read alone, as its own chunk
        peer.sendall(b"c")
        time.sleep(0.2)  # not read: 130 counted against a cap of 100, though only 2 bytes are held
        assert capped.reader.take() == [(token, b"a"), (token, b"b")]
        assert capped.chunks(lambda got: bool(got)) == [(token, b"c")]
    finally:
        capped.close()


def test_an_unwatched_socket_is_read_no_more_and_its_reused_number_is_a_new_token(
        thread: _Thread, pairs: SocketPairs) -> None:
    ours, peer = pairs.make()
    fd = ours.fileno()
    old = thread.reader.watch(fd)
    thread.reader.pause(old)
    peer.sendall(b"for the old connection")  # readable, not read (paused) when it is lost
    thread.reader.unwatch(old)
    ours.close()
    reused, reused_peer = pairs.make()
    assert reused.fileno() == fd
    new = thread.reader.watch(fd)
    assert new != old
    thread.reader.resume(old)  # a stale token names nothing
    thread.reader.unwatch(old)
    reused_peer.sendall(b"for the new one")
    assert thread.chunks(lambda got: bool(got)) == [(new, b"for the new one")]


def test_a_closed_reader_refuses_new_sockets_and_ignores_the_rest(
        pairs: SocketPairs) -> None:
    closed = _Thread()
    ours, _peer = pairs.make()
    token = closed.reader.watch(ours.fileno())
    closed.close()
    closed.reader.close()  # twice: harmless
    closed.reader.pause(token)
    closed.reader.unwatch(token)
    with pytest.raises(RuntimeError):
        closed.reader.watch(ours.fileno())
    with pytest.raises(ValueError):
        _Thread(connection_cap=0)


async def test_the_receiver_feeds_each_chunk_to_its_stream_and_ends_it_as_asyncio_does() -> None:
    require_build()
    loop = asyncio.get_running_loop()
    receiver = Receiver.start(loop)
    assert receiver is not None
    try:
        served: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            served.append((reader, writer))

        def protocol() -> asyncio.StreamReaderProtocol:
            from rebalance_lab.coordinator.receiver import ReceivedProtocol
            return ReceivedProtocol(asyncio.StreamReader(limit=16, loop=loop), serve, loop, receiver)

        listener = await loop.create_server(protocol, "127.0.0.1", 0)
        host, port = listener.sockets[0].getsockname()[:2]
        _reader, writer = await asyncio.open_connection(host, port)
        writer.write(b"a" * 100)  # over the stream's limit: it pauses the thread's reading, then resumes it
        writer.write_eof()
        for _ in range(200):
            if served:
                break
            await asyncio.sleep(0.01)
        assert receiver.watched == 1
        assert await asyncio.wait_for(served[0][0].read(), 5) == b"a" * 100  # then the end of the stream
        served[0][1].close()  # half-open until the server closes it, as with asyncio's reading
        writer.close()
        listener.close()
        await listener.wait_closed()
        for _ in range(200):
            if not receiver.watched:
                break
            await asyncio.sleep(0.01)
        assert receiver.watched == 0  # connection_lost unwatched it
    finally:
        receiver.close()


async def test_without_the_extension_there_is_no_receiver_and_asyncio_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(native.ENV, "0")
    assert Receiver.start(asyncio.get_running_loop()) is None


class _Flaky:
    """A Reader whose take() fails as told (``MemoryError``: kept for the next take; ``OSError``: lost)."""

    def __init__(self, wake_fd: int, connection_cap: int, total_cap: int) -> None:
        self.wake_fd = wake_fd
        self.outcomes: list[Any] = []
        self.closed = False

    def watch(self, fd: int) -> int | None:
        return None

    def unwatch(self, token: int) -> None:
        pass

    def pause(self, token: int) -> None:
        pass

    def resume(self, token: int) -> None:
        pass

    def take(self) -> list[tuple[int, bytes | int]]:
        outcome = self.outcomes.pop(0) if self.outcomes else []
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def close(self) -> None:
        self.closed = True


class _Transport:
    def __init__(self) -> None:
        self.aborted = False

    def is_closing(self) -> bool:
        return self.aborted

    def abort(self) -> None:
        self.aborted = True


def _making(made: list[_Flaky]) -> Callable[[int, int, int], _Flaky]:
    def make(wake_fd: int, connection_cap: int, total_cap: int) -> _Flaky:
        made.append(_Flaky(wake_fd, connection_cap, total_cap))
        return made[0]
    return make


async def _wake(receiver: Receiver) -> None:
    os.write(receiver._pipe.write_fd, b"r")
    for _ in range(10):
        await asyncio.sleep(0.005)


async def test_a_take_out_of_memory_is_asked_again_and_one_that_lost_bytes_ends_every_connection() -> None:
    loop = asyncio.get_running_loop()
    flaky: list[_Flaky] = []
    receiver = Receiver(loop, _making(flaky))
    try:
        stream, transport = asyncio.StreamReader(loop=loop), _Transport()
        receiver._watched[7] = (stream, asyncio.Protocol(), transport)
        flaky[0].outcomes = [MemoryError(), [(7, b"kept")]]
        await _wake(receiver)  # the retry after 10 ms takes what the thread kept
        assert bytes(stream._buffer) == b"kept"  # type: ignore[attr-defined]
        flaky[0].outcomes = [OSError(errno.ENOMEM, "lost")]
        await _wake(receiver)
        assert transport.aborted  # never served with a gap in its bytes
    finally:
        receiver.close()


async def test_a_retry_due_after_close_reads_nothing() -> None:
    loop = asyncio.get_running_loop()
    errors: list[Any] = []
    loop.set_exception_handler(lambda _loop, context: errors.append(context))
    flaky: list[_Flaky] = []
    receiver = Receiver(loop, _making(flaky))
    flaky[0].outcomes = [MemoryError(), [(7, b"late")]]
    os.write(receiver._pipe.write_fd, b"r")
    await asyncio.sleep(0.002)  # taken once: the retry is scheduled
    receiver.close()
    await asyncio.sleep(0.05)
    assert flaky[0].closed and flaky[0].outcomes == [[(7, b"late")]] and not errors
    loop.set_exception_handler(None)
