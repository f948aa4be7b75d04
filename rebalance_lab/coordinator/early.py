"""The early shell: a ``serve`` process answers its first clients while asyncio is still being imported (issue 22).

``import asyncio`` costs ~60-70 ms of CPU on the machines issue 22 measures, as long as everything else a ``serve``
process does before its first JoinGroup is answered. So serve binds its brokers' ports and makes its world (the
request core, request_core.py: the same handlers, codecs and coordinator as ever, nothing re-implemented), and
serves from a small ``selectors`` loop on the main thread while another thread imports asyncio and the asyncio
shell (server.py); then the asyncio shell takes over the listening sockets and every live connection
(EmulatorServer.take_over), with the bytes read but not yet served.

What the early loop does as the asyncio shell would: one request at a time per connection, answers in order
(Kafka's network layer mutes a channel until its response is sent), Kafka's verdicts for what closes a
connection, the world's timers fired on time (the select's timeout: an initial rebalance delay ends here too),
and a JoinGroup or SyncGroup that waits for its group answered by the callback that resolves it. What it leaves
for the asyncio shell, with everything behind it on that connection, untouched: the APIs a client does not send
in its first moments (:data:`EARLY_APIS` lists those served), frames big enough for the codec thread, anything
while a fault controller is installed. A parked request still waiting at the handoff is answered by its callback
on the asyncio loop, and its connection is taken over after that answer.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import selectors
import socket
import struct
import time
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple

from rebalance_lab.coordinator.framing import OFFLOAD_BYTES, READ_SIZE, WRITE_HIGH_WATER, FrameBuffer, FrameError
from rebalance_lab.coordinator.handlers import HandlerSpec
from rebalance_lab.coordinator.handlers.api_versions import API_KEY as API_VERSIONS_KEY
from rebalance_lab.coordinator.handlers.base import Parked, RequestContext, Stepped
from rebalance_lab.coordinator.handlers.errors_response import error_response
from rebalance_lab.coordinator.request_core import Answered, ConnectionClosed, RequestCore
from rebalance_lab.coordinator.world import BrokerNode
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode, MalformedRequest

log = logging.getLogger("rebalance_lab.server")
# What a client sends in its first moments (Kafka's clients: ApiVersions, Metadata, FindCoordinator, the classic
# group's JoinGroup/SyncGroup/Heartbeat/LeaveGroup, the offsets, ListOffsets; an admin's CreateTopics, a
# KIP-848 member's heartbeat; a producer's InitProducerId); their handlers answer at once, park, or run steps.
# Fetch's long poll and Produce wait for the asyncio shell.
EARLY_APIS = frozenset({18, 3, 10, 11, 14, 12, 13, 9, 8, 2, 15, 16, 19, 22, 68})
_SIZE = struct.Struct(">i")


class _Waiting(NamedTuple):
    parked: Parked
    correlation_id: int


_LATER = object()  # a request the asyncio shell serves


class EarlyConnection:
    """One accepted connection of the early loop: its bytes, its unsent answers, and what it waits for."""

    __slots__ = ("cid", "closing", "frames", "held", "host", "node", "parked", "sock", "unsent")

    def __init__(self, cid: int, sock: socket.socket, node: BrokerNode, host: str, max_bytes: int) -> None:
        self.cid = cid
        self.sock = sock
        self.node = node
        self.host = host
        self.frames = FrameBuffer(max_bytes)
        self.unsent = bytearray()
        self.held: bytes | None = None  # a request left for the asyncio shell: nothing after it is served here
        self.parked = False  # a request waits for its group: its answer comes first
        self.closing = False  # closed once its unsent answers are written

    def unread(self) -> bytes:
        """What the asyncio shell reads first: the held request (framed again) and every byte after it."""
        held = b"" if self.held is None else _SIZE.pack(len(self.held)) + self.held
        return held + self.frames.remaining()


class EarlyShell:
    """The selectors loop serving ``core``'s world on ``listeners`` (socket, broker) until :meth:`hand_over`."""

    def __init__(self, core: RequestCore, listeners: list[tuple[socket.socket, BrokerNode]]) -> None:
        self.core = core
        self.connections: dict[int, EarlyConnection] = {}
        self._ids = itertools.count(1)
        self._selector: selectors.BaseSelector | None = selectors.DefaultSelector()
        self.listeners = listeners
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, self._drain_wake)
        for sock, node in listeners:
            self._selector.register(sock, selectors.EVENT_READ, lambda _e, s=sock, n=node: self._accept(s, n))
        self._ready: list[EarlyConnection] = []  # connections whose parked answer was written: served next turn
        self._armed: tuple[int, float] | None = None  # (the world's next deadline, when its timer turn runs)
        self._unparked: Callable[[EarlyConnection], None] | None = None  # after the handoff: take it over
        self.answered = 0  # requests answered by this loop (a parked one: when its answer was written)
        self.busy = False  # a turn is serving (not waiting in select)

    @classmethod
    def listening(cls, core: RequestCore) -> EarlyShell:
        """Bind the brokers' ports, make ``core``'s world, and serve it (an address in use raises OSError)."""
        sockets = core._bind_all()
        brokers = core._make_world(sockets)
        nodes = core.world.nodes
        return cls(core, [(sock, nodes[b.node_id]) for sock, b in zip(sockets, brokers, strict=True)])

    # -- the loop ------------------------------------------------------------------------

    def run(self, done: Callable[[], bool]) -> None:
        """Serve until ``done()`` says so; it is asked after every turn (:meth:`wake` starts a turn)."""
        try:
            while not done():
                self.turn(None)
        finally:
            self.busy = False

    def wake(self) -> None:
        """Make the loop turn now (from another thread or a signal handler)."""
        with contextlib.suppress(OSError):  # its buffer is full, so a turn is due anyway; or the shell is closed
            self._wake_w.send(b"\0")

    def turn(self, timeout: float | None) -> bool:
        """One turn: wait for I/O until the world's next timer is due (at most ``timeout`` s if given), serve it,
        fire the due timers, serve the connections whose parked answer was written. False: nothing happened (the
        wait ended with no I/O and no timer due)."""
        assert self._selector is not None, "the early shell has handed over"
        due = self._timeout()
        wait = due if timeout is None else timeout if due is None else min(due, timeout)
        self.busy = False
        events = self._selector.select(wait)
        self.busy = True  # serve's import thread waits before its next module (early_serve.py)
        fired = self._fire_due()  # its time came before this turn's bytes were read: it runs before they are served
        for key, mask in events:
            key.data(mask)
        fired = self._fire_due() or fired
        ready, self._ready = self._ready, []
        for conn in ready:
            self._serve(conn)
        return bool(events) or fired or bool(ready)

    def next_id(self) -> int:
        """The id the next connection gets (the asyncio shell goes on from it: ids stay unique)."""
        return next(self._ids)

    def _timeout(self) -> float | None:
        world = self.core.world
        deadline = None if world.clock.manual else world.deadline_bound()
        if deadline is None:
            self._armed = None
            return None
        if self._armed is None or self._armed[0] != deadline:
            # as server.py arms it, on a monotonic clock finer than the world's milliseconds: the join race's
            # expiration latency is a fraction of one (join_race.py)
            self._armed = (deadline, time.monotonic() + world.timer_delay_s(deadline))
        return max(0.0, self._armed[1] - time.monotonic())

    def _fire_due(self) -> bool:
        """Fire the world's timers if their time has come."""
        if self._armed is None or time.monotonic() < self._armed[1]:
            return False
        self._armed = None
        try:
            self.core.world.fire_timers()
        except Exception:
            log.exception("a timer raised; the emulator keeps serving")
        return True

    def _drain_wake(self, _events: int) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except BlockingIOError:
            pass

    # -- connections -----------------------------------------------------------------------

    def _accept(self, listener: socket.socket, node: BrokerNode) -> None:
        while True:
            try:
                sock, peer = listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # e.g. out of file descriptors: the asyncio shell logs and goes on too
                log.warning("accepting a connection to broker %d failed: %s", node.node_id, exc)
                return
            sock.setblocking(False)
            if sock.family in (socket.AF_INET, socket.AF_INET6):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as asyncio does
            conn = EarlyConnection(next(self._ids), sock, node, f"/{peer[0]}", self.core.config.max_request_bytes)
            self.connections[conn.cid] = conn
            session = self.core._security.session(None, self.core.world.versions, error_response)
            session.bind_frames(conn.frames)
            self.core._sessions[conn.cid] = session
            self._watch(conn)

    def _watch(self, conn: EarlyConnection) -> None:
        """Read while nothing is in flight; write while answers are unsent."""
        if self._selector is None or conn.sock.fileno() < 0:
            return
        stop_reading = conn.parked or conn.held is not None or conn.closing or len(conn.unsent) > WRITE_HIGH_WATER
        events = 0 if stop_reading else selectors.EVENT_READ
        if conn.unsent:
            events |= selectors.EVENT_WRITE
        try:
            key = self._selector.get_key(conn.sock)
        except KeyError:
            key = None
        if key is not None and events == key.events:
            return
        if key is not None:
            self._selector.unregister(conn.sock)
        if events:
            self._selector.register(conn.sock, events, lambda ev, c=conn: self._ready_io(c, ev))

    def _ready_io(self, conn: EarlyConnection, events: int) -> None:
        if events & selectors.EVENT_WRITE:
            self._send(conn, b"")
        if events & selectors.EVENT_READ and conn.cid in self.connections:
            self._receive(conn)
        elif conn.cid in self.connections:
            self._serve(conn)  # its peer read some answers: the requests it sent meanwhile may be served now

    def _receive(self, conn: EarlyConnection) -> None:
        try:
            data = conn.sock.recv(READ_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._close(conn)
            return
        if not data:
            try:
                conn.frames.check_end()
            except FrameError as exc:
                log.warning("closing connection %d from %s to broker %d: %s", conn.cid, conn.host,
                            conn.node.node_id, exc)
            self._close(conn)
            return
        conn.frames.feed(data)
        self._serve(conn)

    def _serve(self, conn: EarlyConnection) -> None:
        """Answer ``conn``'s complete requests in order, until one waits (parked) or is left for asyncio, or its
        peer leaves more than WRITE_HIGH_WATER bytes of answers unread (as Kafka mutes a channel in flight)."""
        while (not (conn.parked or conn.held is not None or conn.closing) and len(conn.unsent) <= WRITE_HIGH_WATER
               and conn.cid in self.connections):
            try:
                payload = conn.frames.next_frame()
                if payload is None:
                    break
                answer = self._answer(conn, payload)
            except (ConnectionClosed, FrameError) as exc:
                if isinstance(exc, ConnectionClosed) and exc.farewell is not None:
                    self._send(conn, exc.farewell)
                log.warning("closing connection %d from %s to broker %d: %s", conn.cid, conn.host,
                            conn.node.node_id, exc)
                conn.closing = True
                break
            if answer is _LATER:
                conn.held = payload
            elif isinstance(answer, _Waiting):
                self._park(conn, answer)
            elif isinstance(answer, bytes):
                self.answered += 1
                self._send(conn, answer)
        if conn.closing and not conn.unsent:
            self._close(conn)
        elif conn.cid in self.connections:
            self._watch(conn)

    def _answer(self, conn: EarlyConnection, payload: bytes) -> bytes | _Waiting | object | None:
        core = self.core
        try:
            header, fast, spec = core._check(conn.node, payload)
        except Answered as answered:
            return answered.response
        if header.api_key not in EARLY_APIS or len(payload) >= OFFLOAD_BYTES or "faults" in core.world.services:
            return _LATER
        try:
            request = fast or codec.decode_request_generic(payload)
        except MalformedRequest as exc:
            raise ConnectionClosed(str(exc)) from exc
        core._observe(header.api_key, header.api_version, request.client_id)
        ctx = core._context(header.api_key, header.api_version, header.correlation_id, request.client_id,
                            conn.host, conn.cid, conn.node, core._sessions[conn.cid])
        if header.api_key == API_VERSIONS_KEY:
            return core._api_versions.answer(ctx, lambda: core._dispatch_now(spec, ctx, request.body))
        result = self._result(spec, ctx, request.body)
        if isinstance(result, Parked):
            if not result.done:
                return _Waiting(result, header.correlation_id)
            result = result.value
        return None if result is None else codec.encode_response(result, header.correlation_id)

    def _result(self, spec: HandlerSpec, ctx: RequestContext, request: Any) -> Any:
        """The handler's result; steps run to their end (nothing else is waiting this early)."""
        result = self.core._handle(spec, ctx, request)
        try:
            if isinstance(result, Stepped):
                while True:
                    next(result.steps)
        except StopIteration as done:
            return done.value
        except Exception as exc:
            return self.core._verdict(exc, spec, ctx, request)
        # none of EARLY_APIS' handlers waits on a loop: a bug if one does (the Awaitable ABC, not inspect: the main
        # thread imports no inspect before its first answer, dataclass_cache.py)
        if isinstance(result, Awaitable):
            close = getattr(result, "close", None)
            if close is not None:
                close()
            log.error("handler %s returned an awaitable in the early shell; answering UNKNOWN_SERVER_ERROR",
                      spec.module)
            return error_response(ctx.api_key, ctx.api_version, request, ErrorCode.UNKNOWN_SERVER_ERROR)
        return result

    def _park(self, conn: EarlyConnection, waiting: _Waiting) -> None:
        conn.parked = True

        def resolved(body: Any) -> None:
            self._write_parked(conn, body, waiting.correlation_id)

        waiting.parked.on_resolve = resolved

    def _write_parked(self, conn: EarlyConnection, body: Any, correlation_id: int) -> None:
        """From the callback that resolves a parked request (a request of another connection, a timer)."""
        if conn.cid not in self.connections:
            return  # closed while it waited
        try:
            response = codec.encode_response(body, correlation_id)
        except Exception:  # never into the code that resolved it
            log.exception("encoding a parked answer failed; closing connection %d", conn.cid)
            self._close(conn)
            return
        conn.parked = False
        self.answered += 1
        self._send(conn, response)
        if conn.cid not in self.connections:
            return  # the write failed: closed
        if self._unparked is not None:
            self._unparked(conn)  # the asyncio shell takes it over now
        else:
            self._ready.append(conn)  # served on this turn's end, not inside the code that resolved it

    def _send(self, conn: EarlyConnection, data: bytes) -> None:
        if conn.unsent or not data:
            conn.unsent += data
            data = bytes(conn.unsent)
            conn.unsent.clear()
        if data:
            try:
                sent = conn.sock.send(data)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError:
                self._close(conn)
                return
            conn.unsent += data[sent:]
        if conn.closing and not conn.unsent:
            self._close(conn)
        elif conn.cid in self.connections:
            self._watch(conn)

    def _close(self, conn: EarlyConnection) -> None:
        self.connections.pop(conn.cid, None)
        self.core._sessions.pop(conn.cid, None)
        if self._selector is not None and conn.sock.fileno() >= 0:
            with contextlib.suppress(KeyError):
                self._selector.unregister(conn.sock)
        conn.sock.close()

    # -- the handoff -----------------------------------------------------------------------

    def hand_over(self, unparked: Callable[[EarlyConnection], None]) -> list[EarlyConnection]:
        """Stop the loop: the live connections that are not waiting, to be taken over now; each one waiting for a
        parked answer goes to ``unparked`` once that answer is written (on the asyncio loop)."""
        assert self._selector is not None, "the early shell has handed over"
        self._unparked = unparked
        self._selector.close()
        self._selector = None
        self._wake_r.close()
        self._wake_w.close()
        self._ready = []  # unparked this turn, not yet served: the asyncio shell serves what they sent
        for conn in [c for c in self.connections.values() if c.closing]:
            _finish(conn)  # a verdict closed it: its last answers go out first (a blocking send, bounded)
            self.release(conn)
        return [conn for conn in self.connections.values() if not conn.parked]

    def release(self, conn: EarlyConnection) -> None:
        """``conn`` is the asyncio shell's now (its socket too)."""
        self.connections.pop(conn.cid, None)
        self.core._sessions.pop(conn.cid, None)

    def close(self) -> None:
        """Stop without a handoff (serve stopped during the early phase): every socket closed."""
        for conn in list(self.connections.values()):
            self._close(conn)
        if self._selector is not None:
            self._selector.close()
            self._selector = None
            self._wake_r.close()
            self._wake_w.close()
        for sock, _node in self.listeners:
            sock.close()


def _finish(conn: EarlyConnection) -> None:
    try:
        conn.sock.settimeout(1.0)
        conn.sock.sendall(conn.unsent)
    except OSError:
        pass
    conn.sock.close()
