"""The asyncio shell: sockets, framing, per-connection order, one timer handle.

All protocol logic lives in handler modules and the sans-I/O components they
call (STYLE.md principle 1). This module only

* listens on one loopback port per emulated broker;
* serves one request per connection at a time, as Kafka's network layer mutes a
  channel until its response is sent (principle 5: clients pipeline and rely on
  order), yields to the other connections between two requests, and stops
  reading a connection whose unsent answers pile up (connection.py); the
  requests a group sends most are taken as their bytes arrive (arrival.py);
* keeps the loop free: frames over 256 KiB are decoded, and big answers encoded,
  in one worker thread, and handlers whose work grows with the request answer
  in steps (handlers.base.Stepped);
* closes connections idle for ``connections.max.idle.ms`` (a periodic sweep);
* closes a connection that sends a malformed, oversized or unknown request,
  with a log line, never disturbing other connections (Kafka does the same);
* arms a single timer for the earliest deadline any component has.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import itertools
import logging
import math
import socket
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from rebalance_lab.config import EmulatorConfig
from rebalance_lab.coordinator.answer_sizes import is_large, release
from rebalance_lab.coordinator.arrival import ArrivalPath
from rebalance_lab.coordinator.clock import Clock
from rebalance_lab.coordinator.connection import (
    ArrivingReader,
    CollectorHold,
    FreezeOnGrowth,
    IdleConnections,
    Output,
)
from rebalance_lab.coordinator.framing import OFFLOAD_BYTES, READ_SIZE, FrameBuffer, FrameError
from rebalance_lab.coordinator.handlers import HandlerSpec
from rebalance_lab.coordinator.handlers.api_versions import API_KEY as API_VERSIONS_KEY
from rebalance_lab.coordinator.handlers.base import Parked, RequestContext, Stepped
from rebalance_lab.coordinator.handlers.errors_response import error_response
from rebalance_lab.coordinator.receiver import ReceivedProtocol, Receiver
from rebalance_lab.coordinator.request_core import (
    Answered,
    ApiVersionsAnswers,
    ConnectionClosed,
    RequestCore,
    RequestObserver,
    WorldHook,
)
from rebalance_lab.coordinator.request_core import bind as _bind
from rebalance_lab.coordinator.sender import BurstSender
from rebalance_lab.coordinator.world import BrokerNode
from rebalance_lab.protocol import classic_group_codec, codec
from rebalance_lab.protocol.errors import MalformedRequest
from rebalance_lab.security import additional
from rebalance_lab.security.listeners import ListenerSecurity

if TYPE_CHECKING:  # security/sasl.py is imported by a SASL listener's first connection only (issue 22)
    from rebalance_lab.coordinator.early import EarlyConnection, EarlyShell
    from rebalance_lab.security.sasl import Step

log = logging.getLogger("rebalance_lab.server")
_STEP_BUDGET_S = 0.005  # a Stepped handler runs this long, then lets the other connections in

__all__ = ["ApiVersionsAnswers", "ConnectionClosed", "EmulatorServer", "RequestObserver", "WorldHook"]


# JoinGroup and SyncGroup frames over the arrival path's bound (the leader's SyncGroup of thousands of assignments)
# are read by their fast-path decoders all the same: ~1.9 us an assignment against the schema codec's ~4.1 (issue
# 22: at 10,000 members ~20 ms less before any SyncGroup is answered). Same verdicts: they return None for anything
# unusual, which the schema codec then reads.
_UNBOUNDED = {classic_group_codec.JOIN_KEY: classic_group_codec.decode_join_request,
              classic_group_codec.SYNC_KEY: classic_group_codec.decode_sync_request}


def _decode_unbounded(payload: bytes) -> codec.DecodedRequest:
    api_key = int.from_bytes(payload[:2], "big")
    fast = _UNBOUNDED.get(api_key)
    read = None if fast is None else fast(payload, None)
    if read is None:
        return codec.decode_request_generic(payload)
    correlation_id, client_id, body = read
    return codec.DecodedRequest(api_key, body.version, correlation_id, client_id, body)


def _authentication_answer(step: Step) -> bytes | None:
    if step.close:
        raise ConnectionClosed(step.reason, step.reply)
    return step.reply


class EmulatorServer(RequestCore, ArrivalPath):
    """One process serving N emulated brokers. Use ``async with`` or start()/stop()."""

    def __init__(
        self,
        config: EmulatorConfig | None = None,
        *,
        clock: Clock | None = None,
        world_hooks: tuple[WorldHook, ...] = (),
    ) -> None:
        super().__init__(config, clock=clock, world_hooks=world_hooks)
        self._servers: list[asyncio.base_events.Server] = []
        self._connections: dict[int, tuple[asyncio.Task[None], asyncio.StreamWriter]] = {}
        self._connection_ids = itertools.count(1)
        self._timer: asyncio.Handle | None = None
        self._armed_deadline: int | None = None
        self._armed_due = math.inf  # the loop time the armed timer is due at (after its expiration latency)
        self._arm_pending = False  # _arm_soon scheduled a re-arm for the loop's next turn
        self._taken = 0  # JoinGroup/SyncGroups taken at arrival, handled on the loop's next turn in order (arrival.py)
        self._handled = 0  # ... of which handled
        self._loop: asyncio.AbstractEventLoop | None = None
        self._cleanups: list[Callable[[], None]] = []
        self._idle = IdleConnections(self.config.connections_max_idle_ms)
        self._idle_sweep: asyncio.TimerHandle | None = None
        self._codec_pool: ThreadPoolExecutor | None = None  # started by the first big frame
        self._sender: BurstSender | None = None  # sends join/sync answers from a C thread (sender.py), when built
        self._receiver: Receiver | None = None  # reads plaintext connections from a C thread (receiver.py), when built
        self._collector = CollectorHold()
        self._additional = additional.additional_listeners(self.config)  # more listeners, same brokers
        self._adopted: list[socket.socket] | None = None  # the early shell's listening sockets (taking_over)
        self._adopting: set[asyncio.Task[None]] = set()

    # -- lifecycle -----------------------------------------------------------------

    async def start(self) -> EmulatorServer:
        self._loop = asyncio.get_running_loop()
        if self._receiver is None:  # the network threads, before the listeners: every connection uses them
            self._receiver = Receiver.start(self._loop)
        if self._sender is None:
            self._sender = BurstSender.start(self._loop)
        adopted = self._adopted is not None
        sockets = self._adopted if self._adopted is not None else self._bind_all()
        FreezeOnGrowth.install()  # the world about to be made (and every later growth) stays out of full collections
        self._cleanups.append(FreezeOnGrowth.remove)
        extra = additional.bind(self._additional, self.config.host, self.config.brokers, _bind, sockets)
        brokers = self._make_world(sockets) if not adopted else [b.info for b in self.world.nodes.values()]
        world = self.world
        world.on_wake(self._arm_timer)
        for broker, sock in zip(brokers, sockets, strict=True):
            node = world.nodes[broker.node_id]
            server = await self._start_server(self._client_handler(node), sock, self._security)
            self._servers.append(server)
        for security, extra_sockets in extra:
            for broker, sock in zip(brokers, extra_sockets, strict=True):
                handler = self._client_handler(world.nodes[broker.node_id], security)
                self._servers.append(await self._start_server(handler, sock, security))
        if extra:
            world.services[additional.ADDRESSES] = additional.addresses(extra, brokers)
        self._arm_timer()
        self._schedule_idle_sweep()
        return self

    # -- taking over from the early shell of a serve process (coordinator/early.py) -----------

    @classmethod
    def taking_over(cls, shell: EarlyShell) -> EmulatorServer:
        """The asyncio shell going on with an early shell's world and sockets: ``await take_over(shell)``."""
        core = shell.core
        server = cls(core.config, clock=core._clock, world_hooks=core._world_hooks)
        server._handlers, server._world = core._handlers, core._world
        server._request_observers, server._api_versions = core._request_observers, core._api_versions
        server._adopted = [sock for sock, _node in shell.listeners]
        return server

    async def take_over(self, shell: EarlyShell) -> EmulatorServer:
        """Listen on the early shell's sockets and take over its connections, at a turn boundary of its loop.

        A connection is taken over with the answers it has not yet sent and the bytes it has not yet served, in
        that order, before anything its socket delivers next; one waiting for a parked answer, once the callback
        that resolves it has written it (its socket is not read meanwhile, as Kafka mutes a channel in flight).
        """
        ready = shell.hand_over(lambda conn: self._adopt(shell, conn))  # before any await: no callback missed
        self._cleanups.append(shell.close)  # parked ones never answered (stopped first)
        await self.start()
        self._connection_ids = itertools.count(shell.next_id())
        for conn in ready:
            self._adopt(shell, conn)
        return self

    def _adopt(self, shell: EarlyShell, conn: EarlyConnection) -> None:
        shell.release(conn)
        loop = self._loop
        assert loop is not None
        handler = self._client_handler(conn.node, cid=conn.cid)
        reader = ArrivingReader(2**16, loop, self._expire_overdue)
        forget = None if self._sender is None else self._sender.forget
        protocol = _TakenOver(reader, handler, loop, self._receiver, forget, bytes(conn.unsent), conn.unread())
        task = loop.create_task(self._connect_taken(protocol, conn.sock))
        self._adopting.add(task)
        task.add_done_callback(self._adopting.discard)

    async def _connect_taken(self, protocol: asyncio.StreamReaderProtocol, sock: socket.socket) -> None:
        assert self._loop is not None
        try:
            await self._loop.connect_accepted_socket(lambda: protocol, sock=sock)
        except OSError as exc:
            log.warning("taking over a connection of the early shell failed: %s", exc)
            sock.close()

    async def _start_server(self, handler: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Any],
                            sock: socket.socket, security: ListenerSecurity) -> asyncio.base_events.Server:
        """``asyncio.start_server`` with an :class:`ArrivingReader` as each connection's reader."""
        loop = self._loop
        assert loop is not None

        receiver = self._receiver  # it reads plaintext connections only (a TLS transport is another class)
        forget = None if self._sender is None else self._sender.forget

        def protocol() -> asyncio.StreamReaderProtocol:
            return ReceivedProtocol(ArrivingReader(2**16, loop, self._expire_overdue), handler, loop, receiver, forget)

        return await loop.create_server(protocol, sock=sock, ssl=security.ssl_context)

    async def stop(self) -> None:
        for server in self._servers:
            server.close()
        for task, writer in list(self._connections.values()):
            task.cancel()
            writer.close()
        tasks = [task for task, _ in self._connections.values()]
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        for server in self._servers:
            await server.wait_closed()
        self._servers.clear()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._armed_due = math.inf
        if self._idle_sweep is not None:
            self._idle_sweep.cancel()
            self._idle_sweep = None
        if self._codec_pool is not None:
            self._codec_pool.shutdown(wait=False, cancel_futures=True)
            self._codec_pool = None
        if self._sender is not None:  # after the connections: nothing is offered any more
            self._sender.close()  # joins its thread: its last sends never block (MSG_DONTWAIT)
            self._sender = None
        if self._receiver is not None:
            self._receiver.close()
            self._receiver = None
        while self._cleanups:
            self._cleanups.pop()()

    def add_cleanup(self, cleanup: Callable[[], None]) -> None:
        """Run ``cleanup`` when the server stops (e.g. close a recording file)."""
        self._cleanups.append(cleanup)

    async def __aenter__(self) -> EmulatorServer:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- broker control (fault injection builds on these) ---------------------------

    def close_connections(self, predicate: Callable[[int], bool] = lambda _cid: True) -> int:
        closed = 0
        for cid, (task, writer) in list(self._connections.items()):
            if predicate(cid):
                writer.close()
                task.cancel()
                closed += 1
        return closed

    # -- timers --------------------------------------------------------------------

    def _arm_timer(self) -> None:
        if self._loop is None or self._world is None:
            return
        deadline = None if self._world.clock.manual else self._world.deadline_bound()
        if self._timer is not None and deadline == self._armed_deadline:
            return  # most requests leave the earliest deadline where it was
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._armed_deadline = deadline
        if deadline is None:
            self._armed_due = math.inf
            return  # nothing pending, or a manual clock: timers fire only when a test advances it
        delay = self._world.timer_delay_s(deadline)
        self._armed_due = self._loop.time() + delay
        self._timer = self._loop.call_later(delay, self._fire_timers)

    def _arm_soon(self) -> None:
        """Re-arm once the loop turns: requests answered at arrival in one loop turn share one re-arm.

        Asking every component for its earliest deadline after each heartbeat was ~6% of a heartbeat's server
        CPU at 2,000 members; one loop turn answers many connections' heartbeats. A heartbeat moves its member's
        session deadline later, so the armed timer is at worst early (it fires nothing and re-arms); a timer a
        request made due waits at most for the rest of this turn's arrivals (the task path arms at once).
        """
        if not self._arm_pending and self._loop is not None:
            self._arm_pending = True
            self._loop.call_soon(self._arm_now)

    def _arm_now(self) -> None:
        self._arm_pending = False
        self._arm_timer()

    def _expire_overdue(self) -> None:
        """Bytes arrived: an armed timer already due fires first, so what arrived after its time comes after it.

        A broker's expiration runs on its own thread at its time; the loop's timer turn comes up to its poll
        resolution (1 ms) late, and a request read meanwhile would otherwise get in before it (the join race's
        modelled latency, join_race.py, is then the time the expiration runs at).
        """
        if self._armed_due <= self._loop.time():  # type: ignore[union-attr]  # armed only while running
            if self._timer is not None:
                self._timer.cancel()
            self._fire_timers()

    def _fire_timers(self) -> None:
        if self._handled < self._taken and self._loop is not None:
            # Requests already received go first: a broker queues an expiration behind the requests its network
            # threads have already handed over (join_race.py). Those taken at arrival are handled in order by
            # callbacks already queued; this runs after the ones taken so far, not after any taken later (a
            # stream of JoinGroups cannot hold it back), and an arrival meanwhile has nothing more to fire.
            self._armed_due = math.inf
            self._deferred = None  # requests taken from now on are handled after this timer turn (arrival._defer)
            self._timer = self._loop.call_soon(self._fire_after, self._taken)
            return
        self._fire_now()

    def _fire_after(self, taken: int) -> None:
        if self._handled < taken and self._loop is not None:
            self._timer = self._loop.call_soon(self._fire_after, taken)
            return
        self._fire_now()

    def _fire_now(self) -> None:
        self._timer = None
        try:
            self.world.fire_timers()
        except Exception:
            log.exception("a timer raised; the emulator keeps serving")
        self._arm_timer()

    def advance(self, ms: int) -> None:
        """Move a manual clock forward and fire every timer that became due."""
        clock = self.world.clock
        advance = getattr(clock, "advance", None)
        if advance is None:
            raise RuntimeError("advance() needs the emulator to run on a manual clock")
        advance(ms)
        self.world.fire_timers()
        self._arm_timer()

    # -- idle connections (Kafka's Selector.maybeCloseOldestConnection) ------------------

    def _schedule_idle_sweep(self) -> None:
        if self._loop is not None and self.config.connections_max_idle_ms >= 0:  # negative: never (as Kafka)
            self._idle_sweep = self._loop.call_later(self._idle.sweep_interval_s(), self._sweep_idle)

    def _sweep_idle(self) -> None:
        for cid in self._idle.expired():
            self._idle.forget(cid)
            entry = self._connections.get(cid)
            if entry is not None:
                log.info("closing connection %d: idle for more than %d ms (connections.max.idle.ms)",
                         cid, self.config.connections_max_idle_ms)
                entry[1].close()  # what was written still leaves first (Kafka: CloseMode.GRACEFUL)
                entry[0].cancel()
        self._schedule_idle_sweep()

    # -- connections -----------------------------------------------------------------

    def _client_handler(
        self, node: BrokerNode, security: ListenerSecurity | None = None, cid: int | None = None
    ) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], Any]:
        listener = security or self._security
        given = cid

        async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            cid = next(self._connection_ids) if given is None else given
            task = asyncio.current_task()
            assert task is not None
            self._connections[cid] = (task, writer)
            self._idle.touch(cid)
            self._sessions[cid] = listener.session(
                writer.get_extra_info("ssl_object"), self.world.versions, error_response
            )
            try:
                await self._serve_connection(cid, node, reader, writer)
            except asyncio.CancelledError:
                pass  # stop() or close_connections() ended this connection on purpose
            finally:
                self._connections.pop(cid, None)
                self._sessions.pop(cid, None)
                self._idle.forget(cid)
                writer.close()
                with contextlib.suppress(Exception):
                    await writer.wait_closed()

        return on_connect

    async def _serve_connection(
        self, cid: int, node: BrokerNode, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        peer = writer.get_extra_info("peername")
        host = f"/{peer[0]}" if peer else "/127.0.0.1"
        assert self._loop is not None
        out = Output(writer, self._loop)
        frames = FrameBuffer(self.config.max_request_bytes)
        self._sessions[cid].bind_frames(frames)  # SASL: sasl.server.max.receive.size until authenticated
        idle = self._idle
        try:
            if isinstance(reader, ArrivingReader):
                reader.answer = functools.partial(self._answer_arriving, cid, node, host, out, frames, reader)
            while True:
                payload = frames.next_frame()
                if payload is None:  # read only when no complete request is left (bounded buffering)
                    chunk = await self._read(cid, reader, frames, out)
                    if chunk is None:
                        continue  # a request answered at arrival needed waiting: its answer was added
                    if not chunk:
                        frames.check_end()
                        return
                    idle.touch(cid)
                    out.new_turn()
                    frames.feed(chunk)
                    continue
                idle.begin(cid)  # a request in flight (e.g. a parked JoinGroup): not idle
                try:
                    if len(payload) < OFFLOAD_BYTES:
                        response = await self._process(cid, node, host, payload)
                    else:
                        with self._collector.held():
                            response = await self._process(cid, node, host, payload)
                finally:
                    idle.end(cid)
                if response is not None:
                    out.add(response)
                if out.turn_over():
                    self._arm_timer()  # the timers the turn's requests set are armed before others run
                    await out.next_turn()
        except (ConnectionClosed, FrameError) as exc:
            if isinstance(exc, ConnectionClosed) and exc.farewell is not None:
                out.add(exc.farewell)  # e.g. SASL_AUTHENTICATION_FAILED: Kafka answers, then closes
            out.flush()  # the answers to the requests before the bad one still go out, in order
            log.warning("closing connection %d from %s to broker %d: %s", cid, host, node.node_id, exc)
        except (ConnectionError, asyncio.IncompleteReadError):
            return

    async def _read(self, cid: int, reader: asyncio.StreamReader, frames: FrameBuffer, out: Output) -> bytes | None:
        """The next chunk (empty at the end), or None once the answer a request left at arrival was added."""
        self._arm_timer()  # no timer fires while this connection's turn runs
        arriving = reader if isinstance(reader, ArrivingReader) else None
        if arriving is not None:
            arriving.idle = frames.drained()  # bytes arriving now may be answered at once
        try:
            chunk = await reader.read(READ_SIZE)
        finally:
            if arriving is not None:
                arriving.idle = False
        handoff = None if arriving is None else arriving.take_handoff()
        if handoff is None:
            return chunk
        self._idle.begin(cid)
        try:
            response = await handoff
        finally:
            self._idle.end(cid)
        if response is not None:
            out.add(response)
        if chunk:
            frames.feed(chunk)  # what arrived after that request: taken next, in order
        return None

    async def _process(self, cid: int, node: BrokerNode, host: str, payload: bytes) -> bytes | None:
        session = self._sessions[cid]
        if session.authenticating and not (step := session.receive(payload)).passthrough:
            return _authentication_answer(step)  # SASL listeners: Kafka's SaslServerAuthenticator sees it first
        try:
            header, fast, spec = self._check(node, payload)
        except Answered as answered:
            return answered.response
        world = self.world
        try:
            request = fast or await self._decode(payload)  # the fast path already said no
        except MalformedRequest as exc:
            raise ConnectionClosed(str(exc)) from exc
        self._observe(header.api_key, header.api_version, request.client_id)
        ctx = self._context(header.api_key, header.api_version, header.correlation_id, request.client_id, host, cid,
                            node, session)
        # The one fault-injection hook: a pass-through unless a fault controller is installed
        # (rebalance_lab.faults registers itself as world.services["faults"]; not imported here, so
        # an emulator without faults never loads that package).
        faults = world.services.get("faults")
        if faults is None and header.api_key == API_VERSIONS_KEY:
            return self._api_versions.answer(ctx, lambda: self._dispatch_now(spec, ctx, request.body))
        if faults is None:
            body = await self._dispatch(spec, ctx, request.body)
        else:
            self._arm_timer()  # a fault may pause this request: the timers of the ones before it stay armed
            body = await faults.serve(ctx, request.body, lambda: self._dispatch(spec, ctx, request.body))
        if body is None:
            return None  # e.g. Produce with acks=0 has no response
        return await self._encode(body, header.correlation_id, request.body, big=len(payload) >= OFFLOAD_BYTES)

    async def _encode(self, body: Any, correlation_id: int, request: Any, *, big: bool) -> bytes:
        if not (big or is_large(body)):
            return codec.encode_response(body, correlation_id)
        with self._collector.held():
            response = bytes(await self._off_loop(codec.encode_response, body, correlation_id))
            if big:
                await release(request, body)
            else:
                await release(body)  # a small request's answer may be big (DescribeAcls, ListGroups)
        return response

    async def _decode(self, payload: bytes) -> codec.DecodedRequest:
        if len(payload) < OFFLOAD_BYTES:
            return _decode_unbounded(payload)
        decoded: codec.DecodedRequest = await self._off_loop(_decode_unbounded, payload)
        return decoded

    async def _off_loop(self, work: Callable[..., Any], *args: Any) -> Any:
        """Run codec ``work`` in the one codec thread: the loop keeps serving, at least between GIL switches.

        One thread only, so many big frames at once queue there instead of crowding the loop's thread
        out of the GIL; the work touches only its own bytes and message objects, never the world.
        """
        assert self._loop is not None
        if self._codec_pool is None:
            self._codec_pool = ThreadPoolExecutor(1, thread_name_prefix="rebalance-lab-codec")
        return await self._loop.run_in_executor(self._codec_pool, work, *args)

    async def _dispatch(self, spec: HandlerSpec, ctx: RequestContext, request: Any) -> Any:
        return await self._settle(spec, ctx, request, self._handle(spec, ctx, request))

    async def _settle(self, spec: HandlerSpec, ctx: RequestContext, request: Any, result: Any) -> Any:
        """The answer of a handler's result (a body, a parked reply, steps or an awaitable)."""
        try:
            if isinstance(result, Parked):
                return await self._await_parked(result)
            if isinstance(result, Stepped):
                with self._collector.held():  # a stepped handler's work is big, whatever the request's size
                    return await self._run_steps(result)
            if inspect.isawaitable(result):
                self._arm_timer()  # as for a parked reply: a long poll must not hold back the batch's timers
                return await result
            return result
        except Exception as exc:
            return self._verdict(exc, spec, ctx, request)

    async def _run_steps(self, stepped: Stepped) -> Any:
        while True:
            until = time.perf_counter() + _STEP_BUDGET_S
            try:
                while time.perf_counter() < until:
                    next(stepped.steps)
            except StopIteration as done:
                return done.value
            self._arm_timer()  # a step may have set timers; other connections run now
            await asyncio.sleep(0)

    async def _await_parked(self, parked: Parked) -> Any:
        if parked.done:
            return parked.value
        assert self._loop is not None
        future: asyncio.Future[Any] = self._loop.create_future()

        def deliver(value: Any) -> None:
            if not future.done():
                future.set_result(value)

        parked.on_resolve = deliver
        self._arm_timer()  # the request that parked may have set timers
        return await future


class _TakenOver(ReceivedProtocol):
    """A connection the early shell accepted: its unsent answers written and its unread bytes fed before anything
    its socket delivers next (the transport calls connection_made before it starts reading)."""

    def __init__(self, reader: ArrivingReader, handler: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Any],
                 loop: asyncio.AbstractEventLoop, receiver: Receiver | None, forget: Callable[[int], None] | None,
                 unsent: bytes, unread: bytes) -> None:
        super().__init__(reader, handler, loop, receiver, forget)
        self._unsent, self._unread = unsent, unread

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        if self._unsent:
            transport.write(self._unsent)  # type: ignore[attr-defined]  # a socket transport
        if self._unread:
            self.data_received(self._unread)

