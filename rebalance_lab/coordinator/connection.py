"""What the shell keeps per connection: its answers on their way out, and when it was last active.

Kafka's network layer (``SocketServer.Processor``, ``KafkaChannel`` mute/unmute, ``Selector``) reads
one request of a connection, mutes the channel until that request's response is sent, and serves
the channels round-robin; the server here does the same on asyncio (server.py). This module holds
the two pieces of per-connection state that gives it:

* :class:`Output`: a connection's responses in request order, written as soon as the loop turns
  (several answers of one turn leave in one write); :meth:`Output.next_turn` is where a connection
  yields to the others between requests, and waits while its unsent bytes are above the
  transport's high-water mark (a client that does not read its answers stops being read);
* :class:`IdleConnections`: when each connection was last active, swept periodically for those
  idle longer than ``connections.max.idle.ms`` (Kafka's ``Selector.IdleExpiryManager``; Kafka
  closes such a channel with ``CloseMode.GRACEFUL``);
* :class:`ArrivingReader`: the connection's reader, which lets the server answer requests that need
  no waiting (heartbeats) in the callback that receives their bytes (issue 22).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from rebalance_lab.coordinator.framing import WRITE_HIGH_WATER

_MAX_BATCH = 128  # answers written together at most
# A connection's turn: it serves its pipelined requests for at most this long, then lets every other
# connection take its turn (a time slice rather than one request, so that 1,000 pipelined heartbeats
# do not pay 1,000 loop iterations and 1,000 writes).
TURN_S = 0.001


class Output:
    """A connection's responses, in request order; ``add`` schedules a write for the loop's next turn."""

    def __init__(self, writer: asyncio.StreamWriter, loop: asyncio.AbstractEventLoop) -> None:
        self._writer = writer
        self._loop = loop
        self._pending: list[bytes] = []
        self._scheduled = False
        self._transport = writer.transport
        self._transport.set_write_buffer_limits(high=WRITE_HIGH_WATER)
        self._turn_started = time.perf_counter()
        sock = writer.get_extra_info("socket")
        # The socket's descriptor, for an answer sent from the sender's thread (sender.py); never under TLS, whose
        # bytes only the transport may write
        self.fd = sock.fileno() if sock is not None and writer.get_extra_info("ssl_object") is None else -1

    def new_turn(self) -> None:
        """The connection got the loop back (after a read): its time slice starts now."""
        self._turn_started = time.perf_counter()

    def add(self, response: bytes) -> None:
        self._pending.append(response)
        if len(self._pending) >= _MAX_BATCH:
            self.flush()
        elif not self._scheduled:
            self._scheduled = True
            self._loop.call_soon(self.flush)

    def hold(self, response: bytes) -> None:
        """Add an answer the caller flushes itself (no write scheduled)."""
        self._pending.append(response)

    def write(self, response: bytes) -> None:
        """Write an answer now, after any held or scheduled before it (a parked request's answer, as it resolves:
        one transport write, no list)."""
        if self._pending:
            self._pending.append(response)
            self.flush()
        elif not self._transport.is_closing():
            self._transport.write(response)

    def unsent(self) -> bool:
        """Whether any answer of this connection is not yet handed to its socket (held, scheduled or buffered), or
        the connection is closing: only a connection with none may be written from another thread (sender.py)."""
        return bool(self._pending) or self._transport.get_write_buffer_size() > 0 or self._transport.is_closing()

    def backlogged(self) -> bool:
        """Whether the peer leaves more than :data:`WRITE_HIGH_WATER` bytes of answers unread."""
        return self._transport.get_write_buffer_size() > WRITE_HIGH_WATER

    def flush(self) -> None:
        self._scheduled = False
        pending = self._pending
        if pending and not self._transport.is_closing():  # the transport itself: StreamWriter.write only calls it
            self._transport.write(pending[0] if len(pending) == 1 else b"".join(pending))
        pending.clear()

    def turn_over(self) -> bool:
        """Whether this connection has had its time slice, or its peer is not reading its answers."""
        return (time.perf_counter() - self._turn_started >= TURN_S
                or self._transport.get_write_buffer_size() > WRITE_HIGH_WATER)

    async def next_turn(self) -> None:
        """Let the others run, and wait while the peer is not reading.

        ``sleep(0)`` puts this connection at the back of the loop's ready queue (round-robin, like
        Kafka's Processor serving each channel in turn); ``drain`` waits only while more than
        :data:`WRITE_HIGH_WATER` bytes are unsent (the transport paused writing).
        """
        await asyncio.sleep(0)
        if self._transport.get_write_buffer_size() > WRITE_HIGH_WATER:
            self.flush()
            await self._writer.drain()
        self._turn_started = time.perf_counter()


class ArrivingReader(asyncio.StreamReader):
    """A connection's StreamReader whose bytes may be answered as they arrive (issue 22: 10,000 heartbeats/s).

    A connection's task reads a chunk, takes its frames in turn and answers them (server.py). Waking that task
    for every heartbeat (a future, a task step, the coroutines it resumes) and scheduling a separate write cost
    more than answering the heartbeat. While the task waits for bytes with nothing half-received (``idle``),
    ``answer(data)`` is offered each arriving chunk first: it answers the complete requests at its start that
    need no waiting, writes their answers in one write, and says how many bytes it used; the rest is buffered
    for the task as usual, so a connection's requests are still answered in order, one at a time. A request it
    began but cannot finish at once is left as ``handoff`` (an awaitable of its answer), which the task awaits
    before the rest.

    A JoinGroup or SyncGroup that waits for its group (``parked``) is answered by the callback that resolves it,
    with the task still waiting here: meanwhile what arrives is kept without waking the task (and an end of
    stream is held back), so nothing after the parked request is read before its answer is written;
    :meth:`unpark` then hands them to the task, or, with nothing kept, goes back to answering at arrival.
    """

    def __init__(self, limit: int, loop: asyncio.AbstractEventLoop,
                 on_arrival: Callable[[], None] = lambda: None) -> None:
        super().__init__(limit=limit, loop=loop)
        self.on_arrival = on_arrival  # called first as bytes arrive (the server fires a timer already due)
        self.idle = False
        self.parked = False
        self.answer: Callable[[bytes], int] | None = None
        self.handoff: Awaitable[Any] | None = None
        self._eof_held = False
        self._resuming = False  # unpark scheduled _resume for the loop's next turn

    def feed_data(self, data: bytes) -> None:  # type: ignore[override]  # the protocol passes bytes
        self.on_arrival()
        if self.parked:
            self._keep(data)
            return
        if self.idle and self.answer is not None and data:
            used = self.answer(data)
            if self.parked:  # a request of this chunk waits for its group: the rest waits for its answer
                self.idle = False
                self._keep(data[used:])
                return
            if used == len(data) and self.handoff is None:
                return  # all answered: the task keeps waiting, nothing was scheduled
            data = data[used:]
            self.idle = False
            if not data:
                self._wakeup_waiter()  # type: ignore[attr-defined]  # CPython's StreamReader: wake the read
                return
        self.idle = False
        super().feed_data(data)

    def feed_eof(self) -> None:
        if self.parked:
            self._eof_held = True  # the parked request is answered first, as the task would have
            return
        super().feed_eof()

    def unpark(self, handoff: Awaitable[Any] | None = None, *, now: bool = False) -> None:
        """The parked request's answer is written (or left to the task as ``handoff``): carry on in order.

        What arrived meanwhile is offered as if it arrived now (the task still waits with nothing half-received: a
        follower's SyncGroup read before the sender's thread reported its JoinGroup answer sent, sender.py): with
        ``now``, at once (the caller is a callback of its own, the sender's report); else on the loop's next turn, as
        this may run inside the callback resolving a group's answers, which must not take another request
        meanwhile. Until then it stays parked: what arrives is kept behind.
        """
        stream: Any = self  # CPython's StreamReader: its buffer, and the read waiting on it
        if handoff is None and stream._buffer and self.answer is not None:
            if not self._resuming:  # else already due on the next turn
                if now:
                    self._resume()
                else:
                    self._resuming = True
                    self._loop.call_soon(self._resume)  # type: ignore[attr-defined]  # CPython's StreamReader
            return
        self.parked = False
        self.handoff = handoff
        if self._eof_held:
            self._eof_held = False
            super().feed_eof()
        if stream._buffer or handoff is not None:
            stream._wakeup_waiter()
        else:
            self.idle = True  # the task still waits with nothing half-received

    def _resume(self) -> None:
        """The bytes kept while parked, offered to the arrival path in order; then an end of stream held back."""
        self._resuming = False
        self.parked = False
        self.handoff = None
        stream: Any = self
        data = bytes(stream._buffer)
        stream._buffer.clear()
        if stream._paused and stream._transport is not None:
            stream._paused = False
            stream._transport.resume_reading()
        eof, self._eof_held = self._eof_held, False
        self.idle = True
        if data:
            self.feed_data(data)
        if eof:
            self.feed_eof()  # held again if a request of those bytes parked

    def _keep(self, data: bytes) -> None:
        """StreamReader.feed_data without waking the read: buffered, and the transport paused past the limit."""
        if not data:
            return
        stream: Any = self  # CPython's StreamReader keeps these privately (asyncio/streams.py)
        stream._buffer.extend(data)
        if len(stream._buffer) > 2 * stream._limit and not stream._paused and stream._transport is not None:
            try:
                stream._transport.pause_reading()
            except NotImplementedError:  # as StreamReader.feed_data: such a transport's bytes are all kept
                stream._transport = None
            else:
                stream._paused = True

    def take_handoff(self) -> Awaitable[Any] | None:
        handoff, self.handoff = self.handoff, None
        return handoff


class IdleConnections:
    """Last activity per connection id (monotonic seconds), and the connections idle too long.

    A connection with a request in flight (a JoinGroup waiting for its group, a long-poll Fetch)
    is never idle: the emulator counts the request as activity until it is answered.
    """

    def __init__(self, max_idle_ms: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_idle_s = max_idle_ms / 1000
        self._clock = clock
        self._last: dict[int, float] = {}
        self._in_flight: set[int] = set()

    def touch(self, cid: int) -> None:
        self._last[cid] = self._clock()

    def begin(self, cid: int) -> None:
        self._in_flight.add(cid)

    def end(self, cid: int) -> None:
        self._in_flight.discard(cid)
        self._last[cid] = self._clock()

    def forget(self, cid: int) -> None:
        self._last.pop(cid, None)
        self._in_flight.discard(cid)

    def expired(self) -> list[int]:
        limit = self._clock() - self.max_idle_s
        return [cid for cid, last in self._last.items() if last < limit and cid not in self._in_flight]

    def sweep_interval_s(self) -> float:
        """How often to look: a quarter of the limit, at most once a second (a coarse check, as Kafka's)."""
        return min(1.0, max(0.01, self.max_idle_s / 4))


class CollectorHold:
    """Hold CPython's cyclic garbage collector while big requests are served (issue 17, defect 1).

    A 10 MB request decodes into millions of objects; each full collection traverses every tracked
    object, and while they live, collections came back every few hundred milliseconds and took
    0.3-1 s each, with the GIL: the loop stopped as if the request ran on it. Those objects form no
    cycles (message containers, lists, strings) and are freed by reference counting when the request
    is answered, so a collection during it finds nothing. The collector is enabled again as soon as
    the last big request in flight is done, after moving what is alive then to the permanent generation
    (``gc.freeze``): a request that made lasting state (200,000 partition logs, ACLs or offsets) would
    otherwise have it traversed by the next collections in one go (0.2-3 s each on a 2-core machine with
    200,000 partitions). The cost: cyclic garbage alive at that moment is never reclaimed (little: the
    emulator's own state forms few cycles). A collector turned off by the embedding program stays off.
    """

    def __init__(self) -> None:
        self._holders = 0
        self._resume = False

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        if self._holders == 0:
            self._resume = gc.isenabled()
            gc.disable()
        self._holders += 1
        try:
            yield
        finally:
            self._holders -= 1
            if self._holders == 0 and self._resume:
                gc.freeze()
                gc.enable()


# Heap growth (pymalloc blocks, ``sys.getallocatedblocks``) past the last freeze that makes the next freeze: a full
# collection traverses what is not frozen, ~0.2-0.3 us an object on a loaded 2-core machine, so 250,000 blocks
# (~150,000 objects) keep one at a few tens of ms.
FREEZE_STEP_BLOCKS = 250_000
# A full collection that took longer than this leaves its survivors frozen: the next one would traverse them again.
FREEZE_AFTER_S = 0.02


class FreezeOnGrowth:
    """Keep the server's long-lived state out of full collections, however it was made (issue 17, Fairness).

    CPython's full collection (generation 2, ``gc_collect_main``) traverses every tracked object not in the
    permanent generation. A world of 200,000 partitions, ACLs or groups built by many small requests (or
    by the configuration at start) never goes through :class:`CollectorHold`, so its full collections took
    0.7-1.4 s each, holding the GIL: the loop stopped. A ``gc.callbacks`` hook around each full collection
    (not after every younger one: ``sys.getallocatedblocks`` costs ~1 ms over a big heap) freezes
    (``gc.freeze``, a list splice, O(1)) what is alive:

    * at its start, when the heap has grown by :data:`FREEZE_STEP_BLOCKS` above its size at the last such
      freeze: the collection then finds nothing to traverse (a world being built is never traversed whole);
    * at its end, when it took longer than :data:`FREEZE_AFTER_S`: what survived it is alive, so freezing
      then keeps no garbage, and the next one does not traverse it again.

    Bounded memory: reference counting still frees frozen objects; only cyclic garbage alive at a freeze
    of the first kind and unreachable later is never reclaimed, and that kind happens only at a new high
    of the heap (one per step of growth: 120 for a heap of 30 million blocks, ~2 GB) (FIDELITY.md,
    differences). Installed once per process, however many servers run; removed with the last.
    """

    _users = 0
    _last = 0
    _started = 0.0
    freezes = 0

    @classmethod
    def install(cls) -> None:
        if cls._users == 0:
            cls._last = sys.getallocatedblocks()
            gc.callbacks.append(cls._around_full_collection)
        cls._users += 1

    @classmethod
    def remove(cls) -> None:
        cls._users -= 1
        if cls._users == 0:
            gc.callbacks.remove(cls._around_full_collection)

    @classmethod
    def _around_full_collection(cls, phase: str, info: dict[str, int]) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            cls._started = time.perf_counter()
            blocks = sys.getallocatedblocks()
            if blocks >= cls._last + FREEZE_STEP_BLOCKS:
                cls._last = blocks
                cls._freeze()
        elif time.perf_counter() - cls._started >= FREEZE_AFTER_S:
            cls._freeze()

    @classmethod
    def _freeze(cls) -> None:
        cls.freezes += 1
        gc.freeze()
