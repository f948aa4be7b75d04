"""Requests read from their sockets by a network thread, beside the event loop (issue 22).

The loop's own read of a request is an epoll wake-up, a callback and a ``recv`` system call, about a quarter of the
loop's time in a rebalance of 10,000 members (py-spy with native frames: the ``recv`` alone ~15%), on one core while
the other waits. Kafka's network threads (its processors) read and frame requests beside the request handlers. Here a
POSIX thread of a C extension (``_receive_many.c``) that never runs Python and never takes the GIL reads every
plaintext connection as its bytes arrive; the loop wakes once per batch (a byte on a pipe) and feeds each chunk to the
connection's reader, as asyncio's transport would have: what happens next (the arrival path, the connection's task,
the frame checks) is the same code in the same order.

* **Taken from asyncio at ``connection_made``**: the transport's own reading is paused before it starts (the
  transport adds its reader on the turn after ``connection_made`` only if it is reading), and the transport's
  ``pause_reading``/``resume_reading`` (the stream reader's backpressure, a parked connection's kept bytes) now pause
  the thread's reading of that socket.
* **Bounded**: the thread reads at most 256 KiB at a time (asyncio's own read size); a connection with
  :data:`CONNECTION_CAP` bytes read and not yet taken is not read again until the loop takes them, and with
  :data:`TOTAL_CAP` bytes in all the thread waits (each chunk counts 64 bytes of bookkeeping beside its data, so a peer
  sending byte by byte is bounded too). What it does not read stays in the kernel's socket buffer and holds
  the peer back, as when the loop is busy.
* **The end**: an end of stream is passed to the protocol's ``eof_received`` (the transport closes unless it keeps
  the connection half-open), a read error to the transport's ``_fatal_error``, exactly as asyncio's transport does;
  bytes read after the transport began closing are dropped, as asyncio reads none then.
* **Descriptors**: the thread reads the socket's own descriptor, no duplicate (a connection needs one descriptor, as
  with asyncio). ``connection_lost`` unwatches it before the transport closes the socket (asyncio calls the protocol
  first, in the same callback), and unwatch waits for a read under way (it never blocks), so a closed connection's
  number is never read when it is reused. If the epoll set refuses a socket, asyncio reads that connection.

TLS connections are read by asyncio (their bytes go through the SSL protocol first); the connections the early shell
hands over (coordinator/early.py) are read by the thread too, after the bytes the early shell had read. Without the
extension (no build, ``REBALANCE_LAB_COMPILED=0``) :meth:`Receiver.start` gives None and asyncio reads every
connection.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
from asyncio import selector_events
from collections.abc import Callable
from typing import Any, Protocol

from rebalance_lab.coordinator.wake_pipe import WakePipe
from rebalance_lab.native import native

__all__ = ["CONNECTION_CAP", "TOTAL_CAP", "Reader", "ReceivedProtocol", "Receiver"]
log = logging.getLogger("rebalance_lab.server")
#: asyncio's plaintext socket transport (a TLS connection's transport is another class)
_SocketTransport: Any = selector_events._SelectorSocketTransport  # type: ignore[attr-defined]

#: Bytes of one connection read and not yet taken by the loop before the thread stops reading it.
CONNECTION_CAP = 1 << 20
#: Bytes read and not yet taken in all before the thread waits.
TOTAL_CAP = 64 << 20
_RETRY_S = 0.01  # a take() that ran out of memory is asked again after this


class Reader(Protocol):
    """The C extension's Reader (``_receive_many.c``); a stand-in in tests."""

    def watch(self, fd: int) -> int | None: ...
    def unwatch(self, token: int) -> None: ...
    def pause(self, token: int) -> None: ...
    def resume(self, token: int) -> None: ...
    def take(self) -> list[tuple[int, bytes | int]]: ...
    def close(self) -> None: ...


class Receiver:
    """The loop's side of the reading thread: watches connections and feeds what it read to their readers."""

    def __init__(self, loop: asyncio.AbstractEventLoop, make_reader: Callable[[int, int, int], Reader]) -> None:
        self._loop = loop
        self._pipe = WakePipe(loop)  # the thread writes a byte when it has read a batch
        try:
            self._reader = make_reader(self._pipe.write_fd, CONNECTION_CAP, TOTAL_CAP)
        except BaseException:
            self._pipe.close()
            raise
        # token -> (the connection's stream reader, its protocol, its transport)
        self._watched: dict[int, tuple[asyncio.StreamReader, asyncio.Protocol, Any]] = {}
        self._closed = False
        self._pipe.listen(self._report)

    @classmethod
    def start(cls, loop: asyncio.AbstractEventLoop) -> Receiver | None:
        """A receiver on ``loop``, or None when the C extension is not built (asyncio then reads)."""
        module = native("rebalance_lab.coordinator._receive_many")
        return None if module is None else cls(loop, module.Reader)

    @property
    def watched(self) -> int:
        return len(self._watched)

    def watch(self, stream: asyncio.StreamReader, protocol: asyncio.Protocol, transport: Any) -> int | None:
        """Read ``transport``'s socket from the thread from now on, feeding ``stream``; its token, or None if the
        transport keeps reading (not a plain socket transport, closed, or refused by the epoll set). Called from the
        protocol's ``connection_made``, before the transport's first read."""
        if self._closed or not isinstance(transport, _SocketTransport) or transport.is_closing():
            return None  # a TLS connection's transport is another class
        sock = transport.get_extra_info("socket")
        if sock is None:
            return None
        token = self._reader.watch(sock.fileno())
        if token is None:
            return None  # the epoll set refused it (ENOSPC, ENOMEM): asyncio reads it
        transport.pause_reading()  # asyncio's own: its reader is then never added (the transport adds it after us)
        # From now on the stream reader's backpressure pauses the thread's reading of this socket
        transport.pause_reading = functools.partial(self._reader.pause, token)
        transport.resume_reading = functools.partial(self._reader.resume, token)
        self._watched[token] = (stream, protocol, transport)
        return token

    def unwatch(self, token: int) -> None:
        """The connection is lost: read it no more. Called before the transport closes its socket."""
        if self._watched.pop(token, None) is not None and not self._closed:
            self._reader.unwatch(token)

    def close(self) -> None:
        """End the thread. Called after every connection is closed; a connection still watched is read no more."""
        if self._closed:
            return
        self._closed = True
        self._reader.close()
        self._pipe.close()

    def _report(self) -> None:
        if self._closed:
            return  # a retry scheduled before close(): the pipe and the thread are gone
        chunks = self._take()
        if chunks is None:
            return
        watched = self._watched
        for token, chunk in chunks:
            entry = watched.get(token)
            if entry is None:
                continue  # lost meanwhile
            stream, protocol, transport = entry
            if transport.is_closing():
                continue  # asyncio reads nothing once a transport closes
            if chunk.__class__ is not bytes:
                self._ended(protocol, transport, chunk)  # type: ignore[arg-type]  # an int: 0 or -errno
                continue
            try:
                stream.feed_data(chunk)  # StreamReaderProtocol.data_received, without its frame
            except (SystemExit, KeyboardInterrupt):
                raise
            except BaseException as exc:  # as asyncio's transport: the connection ends, the server goes on
                transport._fatal_error(exc, "Fatal error: protocol.data_received() call failed.")

    def _take(self) -> list[tuple[int, bytes | int]] | None:
        """What the thread read since the last take; None if nothing can be fed now."""
        self._pipe.drain()  # first: a batch read after take() writes its byte again
        try:
            return self._reader.take()
        except MemoryError:  # the thread keeps them: ask again (not once closed: the pipe is gone)
            log.exception("taking what the reading thread read failed; asking again")
            if not self._closed:
                self._loop.call_later(_RETRY_S, self._report)
        except OSError:  # they are lost: no connection is served with a gap in its bytes
            log.exception("what the reading thread read was lost; closing every connection it reads")
            for _stream, _protocol, transport in list(self._watched.values()):
                transport.abort()
        return None

    @staticmethod
    def _ended(protocol: asyncio.Protocol, transport: Any, chunk: int) -> None:
        """As asyncio's transport at the end of its stream (``chunk`` 0: the protocol may keep the connection
        half-open) or at a read error (-errno)."""
        if chunk < 0:
            transport._fatal_error(OSError(-chunk, os.strerror(-chunk)), "Fatal read error on socket transport")
            return
        try:
            keep_open = protocol.eof_received()
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as exc:
            transport._fatal_error(exc, "Fatal error: protocol.eof_received() call failed.")
            return
        if not keep_open:
            transport.close()


class ReceivedProtocol(asyncio.StreamReaderProtocol):
    """A connection's protocol for the network threads: its socket read by ``receiver``'s thread (None: by asyncio),
    and ``forget(fd)`` (the burst sender's, sender.py) called before the transport closes the socket."""

    def __init__(self, reader: asyncio.StreamReader, handler: Callable[..., Any], loop: asyncio.AbstractEventLoop,
                 receiver: Receiver | None, forget: Callable[[int], None] | None = None) -> None:
        super().__init__(reader, handler, loop=loop)
        self._receiver = receiver
        self._forget = forget
        self._stream = reader
        self._token: int | None = None
        self._fd = -1

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        sock = transport.get_extra_info("socket")
        self._fd = -1 if sock is None else sock.fileno()
        if self._receiver is not None:
            self._token = self._receiver.watch(self._stream, self, transport)

    def connection_lost(self, exc: Exception | None) -> None:
        # asyncio closes the socket right after this returns: neither thread touches its descriptor from now on
        if self._token is not None and self._receiver is not None:
            self._receiver.unwatch(self._token)
            self._token = None
        if self._forget is not None and self._fd >= 0:
            self._forget(self._fd)
        super().connection_lost(exc)
