"""The burst sender (coordinator/sender.py, _send_many.c): parked answers sent from a network thread (issue 22).

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
from collections.abc import Callable
from pathlib import Path

import pytest

from rebalance_lab import native
from rebalance_lab.coordinator.sender import CHUNK, BurstSender, Worker
from tests.support.compiled_build import require_build
from tests.unit.coordinator.conftest import SocketPairs

NAME = "rebalance_lab.coordinator._send_many"


@pytest.fixture
def worker() -> Callable[[int], Worker]:
    require_build()
    module = native.native(NAME)
    assert module is not None, "the build has no fresh _send_many (python -m rebalance_lab.compiled build)"
    return module.Worker  # type: ignore[no-any-return]


class _Held:
    """The extension's worker, its hand-overs held until ``release``: the thread still sending."""

    def __init__(self, make: Callable[[int], Worker], wake_fd: int) -> None:
        self.real = make(wake_fd)
        self.held = 0

    def submit(self, fd: int, answer: bytes, token: int) -> None:
        self.real.submit(fd, answer, token)

    def forget(self, fd: int) -> None:
        self.real.forget(fd)

    def flush(self) -> None:
        self.held += 1

    def release(self) -> None:
        self.real.flush()

    def take(self) -> list[tuple[int, int]]:
        return self.real.take()

    def close(self) -> None:
        self.real.close()


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
        worker: Callable[[int], Worker], pairs: SocketPairs) -> None:
    loop = asyncio.get_running_loop()
    sender = BurstSender(loop, worker)
    try:
        made = [pairs.make() for _ in range(CHUNK * 2 + 7)]
        answers = [f"answer {i}".encode() * (1 + i % 5) for i in range(len(made))]
        before = _open_fds()
        offers = [(ours.fileno(), answer) for (ours, _), answer in zip(made, answers, strict=True)]
        sent = await _offer_all(sender, offers)
        assert sent == [len(answer) for answer in answers]
        assert [_read_all(peer, len(answer)) for (_, peer), answer in zip(made, answers, strict=True)] == answers
        assert _open_fds() == before  # no descriptor taken: the thread sends on the sockets' own
    finally:
        sender.close()


async def test_a_connection_forgotten_before_its_answer_leaves_gets_nothing_and_its_reused_number_gets_only_its_own(
        worker: Callable[[int], Worker], pairs: SocketPairs) -> None:
    loop = asyncio.get_running_loop()
    sender = BurstSender(loop, worker)
    try:
        ours, peer = pairs.make()
        fd = ours.fileno()
        results: list[int] = []
        assert sender.offer(fd, b"for the first connection", results.append)
        sender.forget(fd)  # connection_lost, before the transport closes the socket (receiver.ReceivedProtocol)
        ours.close()  # before the chunk is handed over
        reused, reused_peer = pairs.make()
        assert reused.fileno() == fd  # the lowest free number: the one just closed
        assert sender.offer(fd, b"for the second", results.append)  # its generation is the current one
        for _ in range(200):
            await asyncio.sleep(0.005)
            if len(results) == 2:
                break
        assert results == [-errno.ECANCELED, len(b"for the second")]
        assert _read_all(peer, 24) == b""  # closed, nothing sent
        assert _read_all(reused_peer, 14) == b"for the second"
        reused_peer.setblocking(False)
        with pytest.raises(BlockingIOError):
            reused_peer.recv(100)  # the first connection's answer never reached the reused number
    finally:
        sender.close()


async def test_forget_after_the_send_or_for_a_descriptor_never_offered_changes_nothing(
        worker: Callable[[int], Worker], pairs: SocketPairs) -> None:
    sender = BurstSender(asyncio.get_running_loop(), worker)
    try:
        ours, peer = pairs.make()
        assert await _offer_all(sender, [(ours.fileno(), b"sent")]) == [4]
        sender.forget(ours.fileno())
        sender.forget(50_000)  # beyond any number offered
        assert _read_all(peer, 4) == b"sent"
        assert await _offer_all(sender, [(ours.fileno(), b"again")]) == [5]  # not closed: still its connection
        assert _read_all(peer, 5) == b"again"
    finally:
        sender.close()


async def test_a_send_that_does_not_fit_reports_how_much_left_and_a_gone_peer_an_errno(
        worker: Callable[[int], Worker], pairs: SocketPairs) -> None:
    loop = asyncio.get_running_loop()
    sender = BurstSender(loop, worker)
    try:
        slow, slow_peer = pairs.make()
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        big = bytes(range(256)) * 8192  # 2 MiB: more than the socket takes at once
        gone, gone_peer = pairs.make()
        gone_peer.close()
        partial, failed = await _offer_all(sender, [(slow.fileno(), big), (gone.fileno(), b"nobody reads this")])
        assert 0 < partial < len(big)
        assert _read_all(slow_peer, partial) == big[:partial]
        assert failed == -errno.EPIPE
    finally:
        sender.close()


def test_the_worker_takes_only_bytes_and_a_descriptor_and_keeps_nothing_of_a_bad_submit(
        worker: Callable[[int], Worker], pairs: SocketPairs) -> None:
    ours, peer = pairs.make()
    wake, wake_w = os.pipe()
    real = worker(wake_w)
    try:
        with pytest.raises(TypeError):
            real.submit(ours.fileno(), "not bytes", 1)  # type: ignore[arg-type]
        with pytest.raises(OSError):
            real.submit(-1, b"no descriptor", 2)
        real.submit(ours.fileno(), b"now", 3)
        real.submit(9_999, b"no such descriptor", 4)  # sent on nothing: reported, never raised on the thread
        real.flush()
        assert _read_all(peer, 3) == b"now"
        assert os.read(wake, 10) == b"w"  # one byte per batch: the loop wakes
        assert real.take() == [(3, 3), (4, -errno.EBADF)]  # the bad submits kept nothing
    finally:
        real.close()
        os.close(wake)
        os.close(wake_w)


async def test_answers_in_flight_hold_no_descriptor_and_are_reported_once_the_thread_sends_them(
        worker: Callable[[int], Worker], pairs: SocketPairs) -> None:
    held: list[_Held] = []

    def make(wake_fd: int) -> _Held:
        held.append(_Held(worker, wake_fd))
        return held[0]

    sender = BurstSender(asyncio.get_running_loop(), make)
    try:
        made = [pairs.make() for _ in range(40)]
        reported: list[int] = []
        before = _open_fds()
        assert all(sender.offer(ours.fileno(), b"x", reported.append) for ours, _ in made)
        await asyncio.sleep(0)  # the flush after this callback: held
        assert held[0].held == 1 and not reported
        assert _open_fds() == before and sender.in_flight == 40  # s13's duplicates held one each here
        held[0].release()
        for _ in range(500):
            await asyncio.sleep(0.01)
            if len(reported) == 40:
                break
        assert reported == [1] * 40 and sender.in_flight == 0
        assert [_read_all(other, 1) for _, other in made] == [b"x"] * 40
    finally:
        sender.close()


async def test_close_sends_what_was_offered_reports_it_and_takes_nothing_more(
        worker: Callable[[int], Worker], pairs: SocketPairs) -> None:
    sender = BurstSender(asyncio.get_running_loop(), worker)
    ours, peer = pairs.make()
    reported: list[int] = []
    before = _open_fds()
    assert sender.offer(ours.fileno(), b"last", reported.append)
    sender.close()  # before the loop's next turn: not yet handed over
    assert reported == [4] and _read_all(peer, 4) == b"last"
    assert not sender.offer(ours.fileno(), b"late", reported.append)
    assert _open_fds() == before - 2  # its wake pipe closed


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
