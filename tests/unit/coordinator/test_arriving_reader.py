"""The connection reader that lets heartbeats be answered as their bytes arrive (coordinator/connection.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from rebalance_lab.coordinator.connection import ArrivingReader


def _reader(answer: Callable[[bytes], int]) -> ArrivingReader:
    reader = ArrivingReader(2**16, asyncio.get_running_loop())
    reader.answer = answer
    return reader


async def _waiting(reader: ArrivingReader) -> asyncio.Task[bytes]:
    task = asyncio.ensure_future(reader.read(1024))
    await asyncio.sleep(0)  # let the read start waiting (one loop turn, no wall-clock wait)
    reader.idle = True
    return task


def test_bytes_answered_at_arrival_never_wake_the_waiting_read() -> None:
    async def scenario() -> None:
        seen: list[bytes] = []
        reader = _reader(lambda data: seen.append(data) or len(data))
        read = await _waiting(reader)
        reader.feed_data(b"heartbeat")
        await asyncio.sleep(0)
        assert seen == [b"heartbeat"] and not read.done()
        assert reader.idle  # still waiting with nothing buffered: the next bytes may be answered too
        read.cancel()

    asyncio.run(scenario())


def test_what_is_not_answered_at_arrival_is_read_by_the_task_in_order() -> None:
    async def scenario() -> None:
        reader = _reader(lambda data: 3)
        read = await _waiting(reader)
        reader.feed_data(b"hb1join,hb2")
        assert await read == b"join,hb2"
        assert not reader.idle  # the task has bytes to take: nothing more is answered behind its back

    asyncio.run(scenario())


def test_a_reader_that_is_not_idle_leaves_every_byte_to_the_task() -> None:
    async def scenario() -> None:
        calls: list[bytes] = []
        reader = _reader(lambda data: calls.append(data) or len(data))
        read = asyncio.ensure_future(reader.read(1024))
        await asyncio.sleep(0)
        reader.feed_data(b"half a frame")  # idle is False: the task holds half-received bytes, or is busy
        assert await read == b"half a frame" and calls == []

    asyncio.run(scenario())


def test_a_request_that_must_wait_is_handed_to_the_task_even_with_no_bytes_after_it() -> None:
    async def scenario() -> None:
        later: Awaitable[bytes | None] = asyncio.get_running_loop().create_future()
        reader = _reader(lambda data: 0)

        def answer(data: bytes) -> int:
            reader.handoff = later
            return len(data)

        reader.answer = answer
        read = await _waiting(reader)
        reader.feed_data(b"join")
        assert await read == b""  # woken with nothing to read: the handoff is what it must take
        assert reader.take_handoff() is later and reader.take_handoff() is None

    asyncio.run(scenario())
