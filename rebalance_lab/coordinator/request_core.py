"""The request-processing core both shells share, without asyncio (issue 22: ready before asyncio is imported).

A request's way through the server is the same whichever shell read its bytes: its header checked (broker up,
API served and advertised, version supported: Kafka's verdicts, in Kafka's order), its context made, its handler
called, a handler's exception turned into its error code, ApiVersions answered from bytes encoded once. The
asyncio shell (server.py, arrival.py) and the early shell of a ``serve`` process (early.py, which answers while
asyncio is still being imported) call these; only waiting (a parked reply, steps spread over loop turns, the codec
thread) is each shell's own. The world is made here too, so the early shell's world is the one the asyncio shell
goes on with.
"""

from __future__ import annotations

import logging
import socket
import struct
from collections.abc import Callable
from typing import Any

from rebalance_lab.config import EmulatorConfig
from rebalance_lab.coordinator import group_service, offsets_service
from rebalance_lab.coordinator.clock import Clock
from rebalance_lab.coordinator.cluster import BrokerInfo
from rebalance_lab.coordinator.handlers import HandlerSpec, load_handlers
from rebalance_lab.coordinator.handlers.api_versions import API_KEY as API_VERSIONS_KEY
from rebalance_lab.coordinator.handlers.api_versions import unsupported_version_response
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.coordinator.handlers.errors_response import error_response
from rebalance_lab.coordinator.world import BrokerNode, World
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode, KafkaError, MalformedRequest
from rebalance_lab.protocol.versions import VersionTable
from rebalance_lab.security.listeners import ConnectionSecurity, ListenerSecurity

log = logging.getLogger("rebalance_lab.server")

WorldHook = Callable[[World], None]
RequestObserver = Callable[[int, int, str], None]  # (api_key, api_version, client_id)
_INT32 = struct.Struct(">i")  # a frame's size, a response's correlation id


class ConnectionClosed(Exception):
    """The server decided to close a connection (the reason is logged), after writing ``farewell`` if any."""

    def __init__(self, reason: str, farewell: bytes | None = None) -> None:
        super().__init__(reason)
        self.farewell = farewell


def bind(host: str, port: int) -> socket.socket:
    """A listening, non-blocking socket (SO_REUSEADDR, as a restarted broker rebinds its port at once)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(512)
    sock.setblocking(False)
    return sock


class RequestCore:
    """Config, handlers, the world and the synchronous steps of serving a request (no sockets of its own)."""

    def __init__(self, config: EmulatorConfig | None = None, *, clock: Clock | None = None,
                 world_hooks: tuple[WorldHook, ...] = ()) -> None:
        self.config = config or EmulatorConfig()
        self._clock = clock
        self._world_hooks = world_hooks
        self._handlers: dict[int, HandlerSpec] = load_handlers()
        self._world: World | None = None
        self._request_observers: list[RequestObserver] = []
        self._security = ListenerSecurity.build(self.config)  # TLS and SASL of the listener (security/)
        self._sessions: dict[int, ConnectionSecurity] = {}
        self._api_versions = ApiVersionsAnswers()

    @property
    def world(self) -> World:
        if self._world is None:
            raise RuntimeError("the emulator is not started")
        return self._world

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{b.host}:{b.port}" for b in self.world.cluster.live_brokers())

    def _make_world(self, sockets: list[socket.socket]) -> list[BrokerInfo]:
        """The world of brokers listening on ``sockets``: group and offset services, hooks, configured topics."""
        brokers = [BrokerInfo(i, *self._advertised(i, s), self._rack(i)) for i, s in enumerate(sockets)]
        world = World(self.config, brokers, self._clock)
        world.versions = VersionTable.build(self._handlers, self.config.api_versions)
        group_service.install(world)  # the classic group coordinator (before hooks, so they can subscribe)
        offsets_service.install(world)  # committed offsets and their retention, gated by the groups
        for hook in self._world_hooks:
            hook(world)
        self._world = world
        for topic, partitions in self.config.topics:
            if topic not in world.cluster.topics:  # a data directory may have brought it back (--data-dir)
                world.cluster.create_topic(topic, partitions)
        return brokers

    def _advertised(self, index: int, sock: socket.socket) -> tuple[str, int]:
        """The address clients are given for broker ``index``: the bound one unless told otherwise."""
        host = self.config.advertised_host or self.config.host
        port = self.config.advertised_port + index if self.config.advertised_port else sock.getsockname()[1]
        return host, port

    def _rack(self, index: int) -> str | None:
        racks = self.config.racks
        return racks[index] if index < len(racks) else None

    def _bind_all(self) -> list[socket.socket]:
        sockets: list[socket.socket] = []
        try:
            for i in range(self.config.brokers):
                port = 0 if self.config.port == 0 else self.config.port + i
                sockets.append(bind(self.config.host, port))
        except OSError:
            for sock in sockets:
                sock.close()
            raise
        return sockets

    def add_request_observer(self, observer: RequestObserver) -> None:
        """Call ``observer(api_key, api_version, client_id)`` once per decoded request, before it is handled.

        It runs on the server's loop and must be quick; an exception it raises is logged and ignored.
        """
        self._request_observers.append(observer)

    def _check(self, node: BrokerNode, payload: bytes) -> tuple[codec.RequestHeader | codec.DecodedRequest,
                                                                 codec.DecodedRequest | None, HandlerSpec]:
        """A request's header (or the whole request, when a fast path read it), checked as Kafka checks it.

        Raises ConnectionClosed for what closes the connection, and _Answered for an unsupported ApiVersions
        (answered with the supported ranges, as Kafka does).
        """
        # A request a fast path reads (a plain KIP-848 heartbeat) is decoded once, header and body together;
        # the checks below do not depend on the body, so their order and verdicts stay as for any request.
        fast = codec.decode_request_fast(payload)
        try:
            header: codec.RequestHeader | codec.DecodedRequest = fast or codec.peek_header(payload)
        except MalformedRequest as exc:
            raise ConnectionClosed(str(exc)) from exc
        if not node.up:
            raise ConnectionClosed(f"broker {node.node_id} is down")
        world = self.world
        spec = self._handlers.get(header.api_key)
        if spec is None or world.versions.range_of(header.api_key) is None:
            raise ConnectionClosed(f"unknown or unadvertised api key {header.api_key}")
        if not world.versions.supports(header.api_key, header.api_version):
            if header.api_key == API_VERSIONS_KEY:
                raise Answered(codec.encode_response(unsupported_version_response(world.versions),
                                                     header.correlation_id))
            raise ConnectionClosed(
                f"unsupported version {header.api_version} of {codec.API_NAMES.get(header.api_key)}"
            )
        return header, fast, spec

    def _context(self, api_key: int, api_version: int, correlation_id: int, client_id: str, host: str, cid: int,
                 node: BrokerNode, session: ConnectionSecurity) -> RequestContext:
        """The one place a request's context is made, for the arrival path and the connection's task alike."""
        return RequestContext(api_key, api_version, correlation_id, client_id, host, cid, node, self.world,
                              session.principal, session.listener)

    def _observe(self, api_key: int, api_version: int, client_id: str) -> None:
        for observer in self._request_observers:
            try:
                observer(api_key, api_version, client_id)
            except Exception:
                log.exception("a request observer raised; the emulator keeps serving")

    def _dispatch_now(self, spec: HandlerSpec, ctx: RequestContext, request: Any) -> Any:
        """A handler that answers at once (ApiVersions), with _dispatch's error handling."""
        try:
            return spec.handle(ctx, request)
        except Exception:
            log.exception("handler %s failed on v%d; answering UNKNOWN_SERVER_ERROR", spec.module, ctx.api_version)
            return error_response(ctx.api_key, ctx.api_version, request, ErrorCode.UNKNOWN_SERVER_ERROR)

    def _handle(self, spec: HandlerSpec, ctx: RequestContext, request: Any) -> Any:
        try:
            return spec.handle(ctx, request)
        except Exception as exc:
            return self._verdict(exc, spec, ctx, request)

    @staticmethod
    def _verdict(exc: Exception, spec: HandlerSpec, ctx: RequestContext, request: Any) -> Any:
        """What a handler's exception answers: its error code, or UNKNOWN_SERVER_ERROR (logged)."""
        if isinstance(exc, KafkaError):
            return error_response(ctx.api_key, ctx.api_version, request, exc.code)
        if isinstance(exc, MalformedRequest):  # a check Kafka makes while parsing (the ACL APIs' UNKNOWN codes)
            raise ConnectionClosed(str(exc)) from exc
        log.error("handler %s failed on v%d; answering UNKNOWN_SERVER_ERROR", spec.module, ctx.api_version,
                  exc_info=exc)
        return error_response(ctx.api_key, ctx.api_version, request, ErrorCode.UNKNOWN_SERVER_ERROR)


class Answered(Exception):  # not an error: a check's verdict that is an answer
    """A check answered the request itself (an unsupported ApiVersions gets the supported ranges)."""

    def __init__(self, response: bytes) -> None:
        super().__init__("answered")
        self.response = response


class ApiVersionsAnswers:
    """ApiVersions answers, encoded once per version (issue 17, defect 4).

    The answer depends only on the request's version and the advertised table (and the flavor, fixed per
    server), never on the request's body, yet building and encoding its ~50 entries cost ~2-3 ms: ten clients
    pipelining 1,500 ApiVersions each kept the loop busy for 40 s and the canary's heartbeats waited. A cached
    answer gets the request's correlation id, at bytes 4-8 of any framed response (size, then the header).
    Not used while a fault controller is installed (faults may change any answer).
    """

    def __init__(self) -> None:
        self._encoded: dict[int, tuple[object, bytes]] = {}  # version -> (the table it was built from, bytes)

    def answer(self, ctx: RequestContext, build: Callable[[], Any]) -> bytes:
        cached = self._encoded.get(ctx.api_version)
        if cached is None or cached[0] is not ctx.world.versions:
            cached = (ctx.world.versions, codec.encode_response(build(), 0))
            self._encoded[ctx.api_version] = cached
        encoded = cached[1]
        return encoded[:4] + _INT32.pack(ctx.correlation_id) + encoded[8:]
