"""Answers resolved in a burst, sent from a second thread (issue 22): Kafka's network threads, for the asyncio shell.

When a group's JoinGroup or SyncGroup phase completes, one callback resolves every parked answer (arrival.py
``_write_parked``): 10,000 answers at 10,000 members. Each send on loopback does the receiving side's TCP work too,
~10 us, which in Kafka runs on its network threads beside the request handlers; on the loop it was the largest single
cost of a big rebalance (benchmarks/coordinator_scale.py). :class:`BurstSender` takes such answers from the loop and
sends them from one thread in a C extension that releases the GIL for the whole chunk (``_send_many.c``, built with the
compiled modules), so the loop goes on reading and answering meanwhile.

Order and lifetime, which a socket written from two threads would otherwise lose:

* only an answer whose connection has nothing else unsent is offered (no held answers, an empty transport buffer),
  and the connection stays parked until :meth:`BurstSender.offer`'s ``done`` runs on the loop: nothing else is
  written on it meanwhile, and what it sends next is kept unread (connection.ArrivingReader);
* the thread sends on a duplicate of the connection's descriptor, made on the loop when offered and closed by the
  thread after the send, so a connection the loop closes meanwhile never has its descriptor number reused under the
  send;
* ``done(sent)`` gets the bytes sent, or a negative errno (then none were): the loop writes what is left through the
  transport, which keeps it while the peer is slow and reports an error as it would any.

Without the extension (no build, ``REBALANCE_LAB_COMPILED=0``) :meth:`BurstSender.start` gives None and the loop
sends every answer itself, as before.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import queue
import threading
from collections.abc import Callable

from rebalance_lab.native import native

__all__ = ["CHUNK", "LOST", "MAX_IN_FLIGHT", "BurstSender"]
log = logging.getLogger("rebalance_lab.server")

#: Answers handed to the thread at once at most: it starts sending while the loop is still resolving a long burst.
CHUNK = 256
#: Answers offered and not yet reported at most, each holding a duplicate descriptor: beyond it the loop writes them
#: itself, so a burst of 10,000 answers never doubles the process's descriptors (an accept would fail with EMFILE).
MAX_IN_FLIGHT = 4 * CHUNK
#: ``done``'s argument when whether the answer left is unknown (the extension failed after sending): the connection
#: must be closed, as a broker closes a channel whose send failed.
LOST = -(1 << 30)

SendAndClose = Callable[[list[int], list[bytes]], list[int]]
_Chunk = tuple[list[int], list[bytes], list[Callable[[int], None]]]


class BurstSender:
    """One thread that sends the answers the loop offers, in chunks, and reports each back on the loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop, send_and_close: SendAndClose) -> None:
        self._loop = loop
        self._send_and_close = send_and_close
        self._queue: queue.SimpleQueue[_Chunk | None] = queue.SimpleQueue()
        self._fds: list[int] = []
        self._answers: list[bytes] = []
        self._done: list[Callable[[int], None]] = []
        self._in_flight = 0  # offered, not yet reported (MAX_IN_FLIGHT)
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="rebalance-lab-sender", daemon=True)
        self._thread.start()

    @classmethod
    def start(cls, loop: asyncio.AbstractEventLoop) -> BurstSender | None:
        """A sender on ``loop``, or None when the C extension is not built (the loop then sends)."""
        module = native("rebalance_lab.coordinator._send_many")
        return None if module is None else cls(loop, module.send_and_close)

    def offer(self, fd: int, answer: bytes, done: Callable[[int], None]) -> bool:
        """Send ``answer`` on the socket ``fd`` from the thread; ``done(sent)`` runs on the loop afterwards.

        False if it cannot (closed, :data:`MAX_IN_FLIGHT` answers not yet reported, or no descriptor to spare): the
        caller writes it itself. Called on the loop, for a connection with nothing else unsent that stays parked until
        ``done`` (the module's docstring).
        """
        if self._closed or self._in_flight >= MAX_IN_FLIGHT:
            return False
        try:
            dup = os.dup(fd)
        except OSError:  # EMFILE: the loop's own write needs none
            return False
        self._in_flight += 1
        if not self._fds:
            self._loop.call_soon(self._dispatch)  # the rest of this burst goes after the loop's current callback
        self._fds.append(dup)
        self._answers.append(answer)
        self._done.append(done)
        if len(self._fds) >= CHUNK:
            self._dispatch()
        return True

    def close(self) -> None:
        """Send what was offered, take no more; the thread ends after the last chunk (``done`` may still run)."""
        if not self._closed:
            self._dispatch()
            self._closed = True
            self._queue.put(None)

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def _dispatch(self) -> None:
        if self._fds:
            self._queue.put((self._fds, self._answers, self._done))
            self._fds, self._answers, self._done = [], [], []

    def _run(self) -> None:
        while (chunk := self._queue.get()) is not None:
            fds, answers, done = chunk
            try:
                sent = self._send_and_close(fds, answers)
            except (TypeError, ValueError):  # a bug: checked before any send, so nothing left and no fd closed
                log.exception("sending a burst of answers failed; the loop writes them")
                for fd in fds:
                    os.close(fd)
                sent = [-errno.EINVAL] * len(fds)
            except Exception:  # after the sends (no memory for the result): whether each answer left is unknown
                log.exception("sending a burst of answers failed; closing their connections")
                sent = [LOST] * len(fds)
            try:
                self._loop.call_soon_threadsafe(self._report, done, sent)
            except RuntimeError:  # the loop is closed: nobody is waiting for these connections any more
                return

    def _report(self, done: list[Callable[[int], None]], sent: list[int]) -> None:
        self._in_flight -= len(done)  # their descriptors are closed
        for callback, count in zip(done, sent, strict=True):
            try:
                callback(count)
            except Exception:  # one connection's bookkeeping must not keep the others parked
                log.exception("finishing a sent answer failed")
