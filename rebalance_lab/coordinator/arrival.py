"""The arrival path of the asyncio shell: requests answered from the receive callback, without the task.

The connection's task (server.py) serves one request at a time. For the requests a group sends most (heartbeats,
the classic JoinGroup and SyncGroup) that costs a future, a task wake-up and several coroutine resumes each; here
they are read by their fast-path codecs as their bytes arrive (connection.ArrivingReader) while the connection has
nothing in progress, handled at once or on the loop's next turn, and a parked answer is written by the callback that
resolves it (issue 22). Whatever this path does not take (another API, an unusual frame, a fault controller, SASL
before authentication, a peer not reading) is left to the task, with its verdicts, in order.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import struct
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from rebalance_lab.coordinator.answer_sizes import is_large
from rebalance_lab.coordinator.connection import TURN_S, ArrivingReader, IdleConnections, Output
from rebalance_lab.coordinator.framing import FrameBuffer
from rebalance_lab.coordinator.handlers import HandlerSpec
from rebalance_lab.coordinator.handlers.base import Parked, RequestContext, Stepped
from rebalance_lab.coordinator.request_core import ConnectionClosed
from rebalance_lab.coordinator.sender import BurstSender
from rebalance_lab.coordinator.world import BrokerNode, World
from rebalance_lab.protocol import classic_group_codec, classic_heartbeat_codec, codec, heartbeat_codec
from rebalance_lab.security.listeners import ConnectionSecurity

__all__ = ["ArrivalPath", "ConnectionClosed"]
log = logging.getLogger("rebalance_lab.server")
_INT32 = struct.Struct(">i")  # a frame's size
# Requests taken as their bytes arrive when they can be (ArrivingReader): the heartbeats, whose handlers answer at
# once, and the classic JoinGroup and SyncGroup, whose answers wait for the group (a parked answer is written by
# the callback that resolves it: no task is woken, issue 22). Their fast-path codecs read them (a frame over
# classic_group_codec.MAX_FAST_BYTES is left to the task). Keyed by the api key's bytes: the fast-path decoder,
# read straight to (correlation id, client id, body) (no DecodedRequest).
_AT_ONCE: dict[bytes, tuple[int, Callable[[bytes], tuple[int, str, Any] | None]]] = {
    struct.pack(">h", classic_heartbeat_codec.API_KEY): (classic_heartbeat_codec.API_KEY,
                                                         classic_heartbeat_codec.decode_request),
    struct.pack(">h", heartbeat_codec.API_KEY): (heartbeat_codec.API_KEY, heartbeat_codec.decode_request),
    struct.pack(">h", classic_group_codec.JOIN_KEY): (classic_group_codec.JOIN_KEY,
                                                      classic_group_codec.decode_join_request),
    struct.pack(">h", classic_group_codec.SYNC_KEY): (classic_group_codec.SYNC_KEY,
                                                      classic_group_codec.decode_sync_request),
}
# Of those, the ones handled on the loop's next turn, as the connection's task would have (woken by their bytes):
# when a JoinGroup runs relative to the shell's timer turn is what the join race models (coordinator/join_race.py,
# fitted on the task path), and a callback is a few microseconds where a task's wake-up was ~100.
_NEXT_TURN = frozenset({classic_group_codec.JOIN_KEY, classic_group_codec.SYNC_KEY})


class ArrivalPath:
    """The arrival path's part of EmulatorServer (a mixin: it shares the server's connections, idle accounting,
    handlers and timer)."""

    # The JoinGroup/SyncGroups deferred to the loop's next turn by one callback, still open to more (_defer)
    _deferred: list[tuple[int, Output, ArrivingReader, tuple[HandlerSpec, RequestContext, Any]]] | None = None

    if TYPE_CHECKING:  # what the server provides
        _sessions: dict[int, ConnectionSecurity]
        _world: World | None
        _handlers: dict[int, HandlerSpec]
        _request_observers: list[Callable[[int, int, str], None]]
        _idle: IdleConnections
        _taken: int
        _handled: int
        _sender: BurstSender | None
        _loop: asyncio.AbstractEventLoop | None
        _connections: dict[int, tuple[asyncio.Task[None], asyncio.StreamWriter]]

        @property
        def world(self) -> World: ...
        def _observe(self, api_key: int, api_version: int, client_id: str) -> None: ...
        def _context(self, api_key: int, api_version: int, correlation_id: int, client_id: str, host: str,
                     cid: int, node: BrokerNode, session: ConnectionSecurity) -> RequestContext: ...
        def _handle(self, spec: HandlerSpec, ctx: RequestContext, request: Any) -> Any: ...
        async def _settle(self, spec: HandlerSpec, ctx: RequestContext, request: Any, result: Any) -> Any: ...
        async def _encode(self, body: Any, correlation_id: int, request: Any, *, big: bool) -> bytes: ...
        def close_connections(self, predicate: Callable[[int], bool] = ...) -> int: ...
        def _arm_soon(self) -> None: ...
        def _arm_timer(self) -> None: ...

    def _answer_arriving(self, cid: int, node: BrokerNode, host: str, out: Output, frames: FrameBuffer,
                         reader: ArrivingReader, data: bytes) -> int:
        """Answer the requests at the start of ``data`` that need no waiting, in one write; bytes used.

        Only while the connection's task waits with nothing half-received (ArrivingReader.idle), so the order
        of its requests holds; at most one turn's time slice (fairness), and not while its peer leaves answers
        unread or a fault controller may change any answer. A frame it does not take (another API, a damaged
        or unusual heartbeat, a size out of bounds) and everything after it are left to the task.
        """
        session = self._sessions.get(cid)
        world = self._world
        if session is None or world is None or session.authenticating or "faults" in world.services \
                or out.backlogged():
            return 0
        started, pos, end = time.perf_counter(), 0, len(data)
        while end - pos > 6 and (fast := _AT_ONCE.get(data[pos + 4:pos + 6])) is not None:
            (size,) = _INT32.unpack_from(data, pos)
            stop = pos + 4 + size
            if not 0 <= size <= frames.max_bytes or stop > end:
                break
            admitted = self._admit(cid, node, host, session, fast, data[pos + 4:stop])
            if admitted is None:
                break
            if fast[0] in _NEXT_TURN:
                pos = stop
                self._defer(cid, out, reader, admitted)
                break
            answer = self._answer(*admitted)
            if answer is None:
                break
            pos = stop
            if isinstance(answer, _Waiting):
                self._idle.begin(cid)
                self._park(cid, out, reader, answer)
                break
            if not isinstance(answer, bytes):
                reader.handoff = answer
                break
            out.hold(answer)
            if time.perf_counter() - started >= TURN_S:
                break
        if pos:
            self._answered_at_arrival(cid, out, reader)
        return pos

    def _answered_at_arrival(self, cid: int, out: Output, reader: ArrivingReader) -> None:
        """The answers given at arrival leave in one write; unless a request is in flight now (it parked, or waits
        for the next turn: its answer stamps the connection active, ``_idle.end``, and it arms the timer itself,
        after the answers before it) the connection was active now and the timer is armed once this turn ends."""
        out.flush()
        if not reader.parked:
            self._idle.touch(cid)
            self._arm_soon()

    def _admit(self, cid: int, node: BrokerNode, host: str, session: ConnectionSecurity,
               fast: tuple[int, Callable[[bytes], tuple[int, str, Any] | None]],
               payload: bytes) -> tuple[HandlerSpec, RequestContext, Any] | None:
        """A fast-path request read and checked, ready for its handler; or None to leave it to the task (_process;
        its checks made here in the same order, so a request left to it gets its verdict)."""
        api_key, decode = fast
        decoded = decode(payload)
        if decoded is None or not node.up:
            return None
        correlation_id, client_id, body = decoded
        world = self.world
        spec = self._handlers.get(api_key)
        if spec is None or not world.versions.supports(api_key, body.version):
            return None
        if self._request_observers:
            self._observe(api_key, body.version, client_id)
        return spec, self._context(api_key, body.version, correlation_id, client_id, host, cid, node, session), body

    def _answer(self, spec: HandlerSpec, ctx: RequestContext,
                body: Any) -> bytes | _Waiting | Awaitable[bytes | None] | None:
        """An admitted request's answer; its parked reply (_Waiting) or an awaitable of it if its handler must
        wait (steps, a long poll, an answer for the codec thread, a verdict that closes the connection after the
        answers before it); None if it has none."""
        correlation_id = ctx.correlation_id
        try:
            result = self._handle(spec, ctx, body)
        except ConnectionClosed as exc:
            return _raising(exc)
        if isinstance(result, Parked):
            if not result.done:
                return _Waiting(result, ctx.correlation_id)
            result = result.value
        elif isinstance(result, Stepped) or inspect.isawaitable(result):
            return self._encode_later(spec, ctx, body, result)
        if result is None:
            return None
        if is_large(result):  # a leader's member list of thousands: encoded in the codec thread, as the task does
            return self._encode(result, correlation_id, body, big=False)
        return codec.encode_response(result, correlation_id)

    async def _encode_later(self, spec: HandlerSpec, ctx: RequestContext, request: Any, result: Any) -> bytes | None:
        body = await self._settle(spec, ctx, request, result)
        return None if body is None else await self._encode(body, ctx.correlation_id, request, big=False)

    def _defer(self, cid: int, out: Output, reader: ArrivingReader,
               admitted: tuple[HandlerSpec, RequestContext, Any]) -> None:
        """Handle an admitted JoinGroup or SyncGroup on the loop's next turn (_NEXT_TURN); until it is answered the
        connection is in flight and reads nothing after it, as if it were parked.

        The requests deferred one after another share one callback (a batch), in the order they came: a callback
        each was ~5% of the loop's time in a 10,000-member rebalance (issue 22). A timer turn closes the batch
        (server._fire_timers): the requests taken after it are handled after the timers, as with a callback each.
        """
        assert self._loop is not None
        reader.parked = True
        self._idle.begin(cid)
        self._taken += 1  # a timer due meanwhile waits for it (server._fire_timers)
        batch = self._deferred
        if batch is None:
            batch = self._deferred = []
            self._loop.call_soon(self._answer_batch, batch)
        batch.append((cid, out, reader, admitted))

    def _answer_batch(self, batch: list[tuple[int, Output, ArrivingReader, tuple[HandlerSpec, RequestContext, Any]]]
                      ) -> None:
        if self._deferred is batch:
            self._deferred = None  # what is deferred from now on waits for the loop's next turn
        for cid, out, reader, admitted in batch:
            try:
                self._answer_deferred(cid, out, reader, admitted)
            except Exception:  # as the loop does for a callback that raises: logged, and the others still run
                log.exception("answering a request taken at arrival failed (connection %d)", cid)

    def _answer_deferred(self, cid: int, out: Output, reader: ArrivingReader,
                         admitted: tuple[HandlerSpec, RequestContext, Any]) -> None:
        self._handled += 1
        if cid not in self._connections:
            return  # closed meanwhile (its task cancelled): as a request the task never took
        try:
            answer = self._answer(*admitted)
        except Exception:  # a bug, not a verdict: logged, and the connection closed rather than left waiting
            log.exception("answering a request taken at arrival failed; closing connection %d", cid)
            self.close_connections(lambda other: other == cid)
            return
        if isinstance(answer, _Waiting):
            self._park(cid, out, reader, answer)
            return
        self._idle.end(cid)
        if isinstance(answer, bytes):
            self._send(cid, out, reader, answer)
        else:
            reader.unpark(answer)  # an awaitable the task takes before anything after it (or None: no answer)
        self._arm_timer()  # as the task path before its next read: the timers this request set, armed at once

    def _park(self, cid: int, out: Output, reader: ArrivingReader, waiting: _Waiting) -> None:
        """A request taken at arrival waits for its group: the callback that resolves it writes its answer.

        Instead of a future that wakes the connection's task (and resumes its coroutines) per parked JoinGroup
        or SyncGroup, ~half of a rebalance's server CPU per member (issue 22). The connection stays as the task
        path leaves it: in flight, hence not idle, and read no further until the answer is written (the reader
        keeps what arrives meanwhile, connection.py).
        """
        reader.parked = True  # in flight since it was taken (the caller began it: _defer, _answer_arriving)
        # A partial, not a closure: called with the answer's body, it runs no Python frame of its own (a full
        # rebalance resolves 2N of them in two bursts, issue 22)
        waiting.parked.on_resolve = functools.partial(self._write_parked, cid, out, reader, waiting.correlation_id)
        self._arm_timer()  # the request that parked may have set timers: armed before others run (_await_parked)

    def _write_parked(self, cid: int, out: Output, reader: ArrivingReader, correlation_id: int, body: Any) -> None:
        """Write a parked request's answer from the resolving callback, then let its connection carry on."""
        if cid not in self._connections:
            return  # closed (or the server stopped) while it waited: nothing to write, no one to wake
        self._idle.end(cid)
        if is_large(body):  # the leader's member list of thousands: the task encodes it in the codec thread
            reader.unpark(self._encode(body, correlation_id, None, big=False))
            return
        try:
            response = codec.encode_response(body, correlation_id)
        except Exception:  # never into the code that resolved it (another connection's request, a timer)
            log.exception("encoding a parked answer failed; closing connection %d", cid)
            self.close_connections(lambda other: other == cid)
            return
        self._send(cid, out, reader, response)

    def _send(self, cid: int, out: Output, reader: ArrivingReader, response: bytes) -> None:
        """Write the answer of a JoinGroup or SyncGroup taken at arrival, then let its connection carry on: from the
        network thread when it can take it (sender.py; the connection stays parked until it reports), else now."""
        sender = self._sender
        if sender is not None and out.fd >= 0 and not out.unsent() and sender.offer(
                out.fd, response, functools.partial(self._sent, cid, out, reader, response)):
            return
        out.write(response)
        reader.unpark()

    def _sent(self, cid: int, out: Output, reader: ArrivingReader, response: bytes, sent: int) -> None:
        """The sender's thread sent ``sent`` bytes of a parked answer (or none: -errno): the rest goes through the
        transport, then the connection carries on as if the loop had written it."""
        if cid not in self._connections:
            return  # closed meanwhile
        if sent < len(response):
            out.write(response[sent:] if sent > 0 else response)  # the transport keeps it, or reports its error
        reader.unpark(now=True)  # the sender's report, a callback of its own: what arrived meanwhile is taken now


class _Waiting(NamedTuple):
    """A request taken at arrival whose handler parked: its reply and the correlation id its answer carries."""

    parked: Parked
    correlation_id: int


async def _raising(exc: Exception) -> bytes | None:
    """A request taken at arrival that closes its connection: the task raises it after the answers before it."""
    raise exc
