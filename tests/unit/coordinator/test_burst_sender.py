"""The burst sender (coordinator/sender.py, _send_many.c): parked answers sent from a second thread (issue 22).

It needs the C extension of the compiled build (./dev test builds it; without one these fail in CI and skip
elsewhere, as the other compiled-build tests do). What the shell does with it is in
tests/integration/test_answers_at_arrival.py.
"""

from __future__ import annotations

import asyncio
import errno
import os
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from rebalance_lab import native
from rebalance_lab.coordinator import sender as sender_module
from rebalance_lab.coordinator.sender import CHUNK, MAX_IN_FLIGHT, BurstSender
from tests.support.compiled_build import require_build

NAME = "rebalance_lab.coordinator._send_many"


@pytest.fixture
def send_and_close() -> sender_module.SendAndClose:
    require_build()
    module = native.native(NAME)
    assert module is not None, "the build has no fresh _send_many (python -m rebalance_lab.compiled build)"
    return module.send_and_close  # type: ignore[no-any-return]


@pytest.fixture
def pairs() -> Iterator[list[tuple[socket.socket, socket.socket]]]:
    made: list[tuple[socket.socket, socket.socket]] = []
    yield made
    for ours, peer in made:
        ours.close()
        peer.close()


def _pair(pairs: list[tuple[socket.socket, socket.socket]]) -> tuple[socket.socket, socket.socket]:
    ours, peer = socket.socketpair()
    ours.setblocking(False)
    pairs.append((ours, peer))
    return ours, peer


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _read_all(sock: socket.socket, size: int) -> bytes:
    sock.settimeout(5)
    got = b""
    while len(got) < size:
        chunk = sock.recv(size - len(got))
        if not chunk:
            break
        got += chunk
    return got


async def _offer_all(sender: BurstSender, offers: list[tuple[int, bytes]]) -> list[int]:
    """Offer each (fd, answer) in one loop callback, as a resolving burst does; the counts ``done`` got, in order."""
    loop = asyncio.get_running_loop()
    results: list[int | None] = [None] * len(offers)
    finished = loop.create_future()

    def done(i: int, sent: int) -> None:
        results[i] = sent
        if all(r is not None for r in results) and not finished.done():
            finished.set_result(None)

    for i, (fd, answer) in enumerate(offers):
        assert sender.offer(fd, answer, lambda sent, i=i: done(i, sent))
    await asyncio.wait_for(finished, 10)
    return [r for r in results if r is not None]


async def test_a_burst_bigger_than_a_chunk_reaches_every_peer_and_each_answer_is_reported_on_the_loop(
        send_and_close: sender_module.SendAndClose, pairs: list[tuple[socket.socket, socket.socket]]) -> None:
    loop = asyncio.get_running_loop()
    sender = BurstSender(loop, send_and_close)
    try:
        made = [_pair(pairs) for _ in range(CHUNK * 2 + 7)]
        answers = [f"answer {i}".encode() * (1 + i % 5) for i in range(len(made))]
        before = _open_fds()
        offers = [(ours.fileno(), answer) for (ours, _), answer in zip(made, answers, strict=True)]
        sent = await _offer_all(sender, offers)
        assert sent == [len(answer) for answer in answers]
        assert [_read_all(peer, len(answer)) for (_, peer), answer in zip(made, answers, strict=True)] == answers
        assert _open_fds() == before  # every duplicate descriptor closed by the thread
    finally:
        sender.close()
        sender.join(5)


async def test_a_connection_closed_before_its_answer_leaves_gets_it_on_its_own_socket_not_on_a_reused_number(
        send_and_close: sender_module.SendAndClose, pairs: list[tuple[socket.socket, socket.socket]]) -> None:
    loop = asyncio.get_running_loop()
    sender = BurstSender(loop, send_and_close)
    try:
        ours, peer = _pair(pairs)
        fd = ours.fileno()
        results: list[int] = []
        assert sender.offer(fd, b"for the first connection", results.append)
        ours.close()  # the loop closes the connection before the chunk is handed over
        reused, reused_peer = _pair(pairs)
        assert reused.fileno() == fd  # the lowest free number: the one just closed
        for _ in range(200):
            await asyncio.sleep(0.005)
            if results:
                break
        assert results == [len(b"for the first connection")]
        assert _read_all(peer, 24) == b"for the first connection"
        reused_peer.setblocking(False)
        with pytest.raises(BlockingIOError):
            reused_peer.recv(100)
    finally:
        sender.close()
        sender.join(5)


async def test_a_send_that_does_not_fit_reports_how_much_left_and_a_gone_peer_an_errno(
        send_and_close: sender_module.SendAndClose, pairs: list[tuple[socket.socket, socket.socket]]) -> None:
    loop = asyncio.get_running_loop()
    sender = BurstSender(loop, send_and_close)
    try:
        slow, slow_peer = _pair(pairs)
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        big = bytes(range(256)) * 8192  # 2 MiB: more than the socket takes at once
        gone, gone_peer = _pair(pairs)
        gone_peer.close()
        partial, failed = await _offer_all(sender, [(slow.fileno(), big), (gone.fileno(), b"nobody reads this")])
        assert 0 < partial < len(big)
        assert _read_all(slow_peer, partial) == big[:partial]
        assert failed == -errno.EPIPE
    finally:
        sender.close()
        sender.join(5)


def test_the_extension_checks_everything_before_it_sends_and_closes_nothing_on_a_bad_argument(
        send_and_close: sender_module.SendAndClose, pairs: list[tuple[socket.socket, socket.socket]]) -> None:
    ours, peer = _pair(pairs)
    dup = os.dup(ours.fileno())
    with pytest.raises(TypeError, match="bytes"):
        send_and_close([dup, dup], [b"fine", "not bytes"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="as many"):
        send_and_close([dup], [])
    os.fstat(dup)  # still open
    peer.setblocking(False)
    with pytest.raises(BlockingIOError):
        peer.recv(10)  # nothing sent
    assert send_and_close([dup], [b"now"]) == [3]
    with pytest.raises(OSError):
        os.fstat(dup)  # closed by the call
    assert peer.recv(10) == b"now"


async def test_answers_not_yet_reported_are_bounded_so_a_burst_never_doubles_the_descriptors(
        send_and_close: sender_module.SendAndClose, pairs: list[tuple[socket.socket, socket.socket]]) -> None:
    release = threading.Event()

    def held(fds: list[int], answers: list[bytes]) -> list[int]:
        release.wait(10)  # the thread still sending
        return send_and_close(fds, answers)

    sender = BurstSender(asyncio.get_running_loop(), held)
    try:
        made = [_pair(pairs) for _ in range(MAX_IN_FLIGHT)]  # one answer each: no socket buffer fills
        reported: list[int] = []
        before = _open_fds()
        assert all(sender.offer(ours.fileno(), b"x", reported.append) for ours, _ in made)
        ours = made[0][0]
        assert not sender.offer(ours.fileno(), b"x", reported.append)  # the loop writes this one itself
        assert _open_fds() == before + MAX_IN_FLIGHT
        release.set()
        for _ in range(500):
            await asyncio.sleep(0.01)
            if len(reported) == MAX_IN_FLIGHT:
                break
        assert reported == [1] * MAX_IN_FLIGHT and _open_fds() == before
        assert sender.offer(ours.fileno(), b"y", reported.append)  # reported: room again
        assert [_read_all(other, 1) for _, other in made] == [b"x"] * MAX_IN_FLIGHT
    finally:
        release.set()
        sender.close()
        sender.join(5)


async def test_after_close_nothing_more_is_taken_and_the_thread_ends(
        send_and_close: sender_module.SendAndClose, pairs: list[tuple[socket.socket, socket.socket]]) -> None:
    sender = BurstSender(asyncio.get_running_loop(), send_and_close)
    ours, _peer = _pair(pairs)
    sender.close()
    assert not sender.offer(ours.fileno(), b"late", lambda sent: None)
    sender.join(5)
    assert not sender._thread.is_alive()


async def test_without_the_extension_there_is_no_sender_and_the_loop_sends(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(native.ENV, "0")
    assert native.native("rebalance_lab.coordinator._not_loaded_here") is None
    assert BurstSender.start(asyncio.get_running_loop()) is None


def test_a_build_from_another_source_is_not_loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    file = NAME.replace(".", "/") + ".so"
    (tmp_path / native.INDEX).write_text(f"{NAME} {file} 1-00000000\n")  # not the source here
    monkeypatch.setenv(native.ENV, str(tmp_path))
    monkeypatch.delitem(sys.modules, NAME, raising=False)
    assert native.native(NAME) is None
    (tmp_path / native.INDEX).write_text(native.index_line(NAME, file))  # the right source, but no such file
    assert native.native(NAME) is None
