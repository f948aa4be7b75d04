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


def _parking(reader: ArrivingReader, used: int, answered: list[bytes] | None = None) -> Callable[[bytes], int]:
    """An answer callback that takes a chunk starting with b"join" as a request whose answer must wait (a parked
    JoinGroup: ``used`` bytes); one starting with b"hb" as a heartbeat it answers (into ``answered``, when given;
    else it leaves it, like everything else, to the task)."""
    def answer(data: bytes) -> int:
        if data.startswith(b"join"):
            reader.parked = True
            return used
        taken = 0
        while answered is not None and data.startswith(b"hb", taken):
            answered.append(data[taken:taken + 3])
            taken += 3
        return taken
    return answer


def test_bytes_behind_a_parked_request_wait_unread_until_it_is_answered() -> None:
    async def scenario() -> None:
        reader = _reader(lambda data: 0)
        reader.answer = _parking(reader, 4)
        read = await _waiting(reader)
        reader.feed_data(b"joinhb1")
        reader.feed_data(b"hb2")  # arrives while the request waits
        await asyncio.sleep(0)
        assert not read.done() and not reader.idle  # kept: the task is not woken, nothing is answered at arrival
        reader.unpark()  # the parked request's answer is written
        assert await read == b"hb1hb2"

    asyncio.run(scenario())


def test_bytes_kept_behind_a_parked_request_are_offered_to_the_arrival_path_once_it_is_answered() -> None:
    async def scenario() -> None:
        answered: list[bytes] = []
        reader = _reader(lambda data: 0)
        reader.answer = _parking(reader, 4, answered)
        read = await _waiting(reader)
        reader.feed_data(b"join")
        reader.feed_data(b"hb1")  # arrives while the request waits (its answer is on the sender's thread)
        assert answered == []
        reader.unpark()  # answered as if it arrived now, on the loop's next turn: the task is not woken
        assert answered == []  # not inside the callback that unparked it (it may be resolving a group's answers)
        reader.feed_data(b"hb3")  # arrives meanwhile: kept behind, in order
        await asyncio.sleep(0)
        assert answered == [b"hb1", b"hb3"] and reader.idle and not read.done()
        reader.feed_data(b"join")
        reader.feed_data(b"hb2xyz")
        reader.unpark()  # what the arrival path leaves goes to the task, in order
        assert await read == b"xyz" and answered == [b"hb1", b"hb3", b"hb2"]

    asyncio.run(scenario())


def test_a_parked_request_with_nothing_behind_it_leaves_the_reader_answering_at_arrival() -> None:
    async def scenario() -> None:
        reader = _reader(lambda data: 0)
        reader.answer = _parking(reader, 4)
        read = await _waiting(reader)
        reader.feed_data(b"join")
        reader.unpark()
        await asyncio.sleep(0)
        assert reader.idle and not reader.parked and not read.done()
        read.cancel()

    asyncio.run(scenario())


def test_the_end_of_stream_behind_a_parked_request_is_seen_only_after_its_answer() -> None:
    async def scenario() -> None:
        reader = _reader(lambda data: 0)
        reader.answer = _parking(reader, 4)
        read = await _waiting(reader)
        reader.feed_data(b"join")
        reader.feed_eof()
        await asyncio.sleep(0)
        assert not read.done() and not reader.at_eof()
        reader.unpark()
        assert await read == b"" and reader.at_eof()

    asyncio.run(scenario())


def test_a_big_parked_answer_is_handed_to_the_task_before_the_bytes_behind_it() -> None:
    async def scenario() -> None:
        later: Awaitable[bytes | None] = asyncio.get_running_loop().create_future()
        reader = _reader(lambda data: 0)
        reader.answer = _parking(reader, 4)
        read = await _waiting(reader)
        reader.feed_data(b"joinhb1")
        reader.unpark(later)
        assert await read == b"hb1" and reader.take_handoff() is later

    asyncio.run(scenario())


class _Transport:
    def __init__(self) -> None:
        self.paused = False

    def pause_reading(self) -> None:
        self.paused = True

    def resume_reading(self) -> None:
        self.paused = False


def test_a_peer_that_keeps_sending_behind_a_parked_request_stops_being_read() -> None:
    async def scenario() -> None:
        reader = ArrivingReader(16, asyncio.get_running_loop())
        transport = _Transport()
        reader.set_transport(transport)  # type: ignore[arg-type]  # only pause/resume are called
        reader.answer = _parking(reader, 4)
        read = await _waiting(reader)
        reader.feed_data(b"join")
        reader.feed_data(b"x" * 32)
        assert not transport.paused  # at most twice the limit kept, as StreamReader does
        reader.feed_data(b"x")
        assert transport.paused and not read.done()
        reader.unpark()
        assert len(await read) == 33

    asyncio.run(scenario())
