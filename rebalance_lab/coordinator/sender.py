"""Answers resolved in a burst, sent from a network thread (issue 22): Kafka's network threads, for the asyncio shell.

When a group's JoinGroup or SyncGroup phase completes, one callback resolves every parked answer (arrival.py
``_write_parked``): 10,000 answers at 10,000 members; JoinGroup/SyncGroups answered on the turn after their arrival
(a follower's SyncGroup after the leader's, ``_answer_deferred``) go the same way. Each send on loopback does the
receiving side's TCP work too, ~10 us, which in Kafka runs on its network threads beside the request handlers; on the
loop it was the largest single cost of a big rebalance (benchmarks/coordinator_scale.py). :class:`BurstSender` hands
such answers to a thread of the C extension ``_send_many.c`` (built with the compiled modules) that never runs Python
and never takes the GIL, so the loop goes on resolving, reading and answering meanwhile, and the thread never waits
for the busy loop's GIL (a Python thread would: it gets the GIL from a busy thread only at the 5 ms switch interval,
twice per chunk).

Order and lifetime, which a socket written from two threads would otherwise lose:

* only an answer whose connection has nothing else unsent is offered (no held answers, an empty transport buffer),
  and the connection stays parked until :meth:`BurstSender.offer`'s ``done`` runs on the loop: nothing else is
  written on it meanwhile, and what it sends next is kept unread (connection.ArrivingReader);
* the thread sends on the socket's own descriptor (no duplicate: an answer in flight holds no descriptor), and the
  connection's protocol calls :meth:`BurstSender.forget` in ``connection_lost``, before the transport closes the
  socket: an answer not yet sent is then dropped (its ``done`` gets ``-ECANCELED``) and a send under way is waited
  for (it never blocks), so a closed connection's number, reused by another, is never sent to;
* ``done(sent)`` gets the bytes sent, or a negative errno (then none were): the loop writes what is left through the
  transport, which keeps it while the peer is slow and reports an error as it would any. The thread wakes the loop
  through a pipe once per batch, not per answer.

Without the extension (no build, ``REBALANCE_LAB_COMPILED=0``) :meth:`BurstSender.start` gives None and the loop
sends every answer itself, as before.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable
from typing import Protocol

from rebalance_lab.coordinator.wake_pipe import WakePipe
from rebalance_lab.native import native

__all__ = ["CHUNK", "BurstSender", "Worker"]
log = logging.getLogger("rebalance_lab.server")

#: Answers handed to the thread at once at most: it starts sending while the loop is still resolving a long burst.
CHUNK = 64
#: How soon the loop asks again for what the thread finished when it had no memory to take it.
_RETRY_S = 0.01


class Worker(Protocol):
    """The extension's ``Worker(wake_fd)`` (``_send_many.c`` says what each does)."""

    def submit(self, fd: int, answer: bytes, token: int) -> None: ...
    def forget(self, fd: int) -> None: ...
    def flush(self) -> None: ...
    def take(self) -> list[tuple[int, int]]: ...
    def close(self) -> None: ...


class BurstSender:
    """The loop's side of the network thread: offers answers in chunks, and runs each ``done`` when it is sent."""

    def __init__(self, loop: asyncio.AbstractEventLoop, make_worker: Callable[[int], Worker]) -> None:
        self._loop = loop
        self._pipe = WakePipe(loop)  # the thread writes a byte when a batch is finished
        try:
            self._worker = make_worker(self._pipe.write_fd)
        except BaseException:
            self._pipe.close()
            raise
        self._done: dict[int, Callable[[int], None]] = {}  # offered, not yet reported (one per parked connection)
        self._tokens = itertools.count()
        self._submitted = 0  # offered, not yet handed to the thread
        self._closed = False
        self._pipe.listen(self._report)

    @classmethod
    def start(cls, loop: asyncio.AbstractEventLoop) -> BurstSender | None:
        """A sender on ``loop``, or None when the C extension is not built (the loop then sends)."""
        module = native("rebalance_lab.coordinator._send_many")
        return None if module is None else cls(loop, module.Worker)

    @property
    def in_flight(self) -> int:
        return len(self._done)

    def offer(self, fd: int, answer: bytes, done: Callable[[int], None]) -> bool:
        """Send ``answer`` on the socket ``fd`` from the thread; ``done(sent)`` runs on the loop afterwards.

        False once closed: the caller writes it itself. Called on the loop, for a connection with nothing else unsent
        that stays parked until ``done`` and whose protocol calls :meth:`forget` before its socket closes (the
        module's docstring).
        """
        if self._closed:
            return False
        token = next(self._tokens)
        self._worker.submit(fd, answer, token)
        self._done[token] = done
        if not self._submitted:
            self._loop.call_soon(self._flush)  # the rest of this burst goes after the loop's current callback
        self._submitted += 1
        if self._submitted >= CHUNK:
            self._flush()
        return True

    def forget(self, fd: int) -> None:
        """The loop is about to close the socket ``fd``: nothing more is sent on it (called in ``connection_lost``)."""
        if not self._closed:
            self._worker.forget(fd)

    def close(self) -> None:
        """Send what was offered, end the thread, and report every answer (``done`` runs for each)."""
        if self._closed:
            return
        self._closed = True
        self._submitted = 0
        self._worker.close()  # hands over what was offered and joins the thread: its sends never block
        self._report()
        self._pipe.close()

    def _flush(self) -> None:
        if self._submitted:
            self._submitted = 0
            self._worker.flush()

    def _report(self) -> None:
        self._pipe.drain()  # first: a batch finished after take() writes its byte again
        try:
            finished = self._worker.take()
        except MemoryError:  # the thread keeps them: ask again (not once closed: the pipe is gone)
            log.exception("taking the sent answers failed; asking again")
            if not self._closed:
                self._loop.call_later(_RETRY_S, self._report)
            return
        done = self._done
        for token, sent in finished:
            try:
                done.pop(token)(sent)
            except Exception:  # one connection's bookkeeping must not keep the others parked
                log.exception("finishing a sent answer failed")

