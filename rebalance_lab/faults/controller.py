"""Applies the fault plan to requests, and the world-level faults, recording each one.

:func:`dispatch_with_faults` is the one hook the asyncio shell calls per request. It is a
plain pass-through until a :class:`FaultController` is installed in the world.
Everything else here runs on the emulator's loop thread (the Python API and the control
endpoint both call it there) and takes time from the world's clock.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import IO, Any

from rebalance_lab.coordinator.classic.admin import AdminError, NotFound
from rebalance_lab.coordinator.consumer.view import ConsumerGroupView
from rebalance_lab.coordinator.group_service import service_of
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.coordinator.handlers.errors_response import error_response
from rebalance_lab.coordinator.transactions.service import transactions_of
from rebalance_lab.coordinator.world import World
from rebalance_lab.faults.plan import DelayRule, ErrorRule, FaultPlan, RequestInfo, api_key_of, error_code_of
from rebalance_lab.faults.records import FaultFired, FaultInjected, describe
from rebalance_lab.protocol import codec

SERVICE_KEY = "faults"
CloseConnections = Callable[[Callable[[int], bool]], int]

__all__ = ["SERVICE_KEY", "AdminError", "FaultController", "dispatch_with_faults", "faults_of"]


def _first(items: Any, name: str) -> str | None:
    """The first entry of a request's list field: a plain string (DescribeGroups ``groups``,
    DeleteGroups ``groups_names``) or an entry's ``name`` (OffsetFetch v8 groups, LeaveGroup v3 members)."""
    if not items:
        return None
    return items[0] if isinstance(items[0], str) else getattr(items[0], name, None)


def request_info(ctx: RequestContext, request: Any) -> RequestInfo:
    """What a rule can match: the API, broker, client, and (group APIs, offsets) the first group and member."""
    group_id = getattr(request, "group_id", None)
    for field in ("groups", "groups_names"):
        if group_id is None:
            group_id = _first(getattr(request, field, None), "group_id")
    member_id = getattr(request, "member_id", None)
    if member_id is None:
        member_id = _first(getattr(request, "members", None), "member_id")
    return RequestInfo(ctx.api_key, ctx.broker.node_id, ctx.client_id,
                       group_id if isinstance(group_id, str) else None,
                       member_id if isinstance(member_id, str) else None)


async def dispatch_with_faults(ctx: RequestContext, request: Any, dispatch: Callable[[], Awaitable[Any]]) -> Any:
    """The shell's hook: serve the request through the world's fault controller, if any."""
    controller = ctx.world.services.get(SERVICE_KEY)
    if not isinstance(controller, FaultController):
        return await dispatch()
    return await controller.serve(ctx, request, dispatch)


def faults_of(world: World) -> FaultController:
    controller = world.services.get(SERVICE_KEY)
    if not isinstance(controller, FaultController):
        raise RuntimeError("no fault controller is installed in this emulator")
    return controller


def _set_throttle(body: Any, api_key: int, api_version: int, throttle_ms: int) -> bool:
    field = codec.response_type(api_key)._struct.fields.get("throttle_time_ms")
    if body is None or field is None or not field.for_version_q(api_version):
        return False
    body.throttle_time_ms = throttle_ms
    return True


class FaultController:
    """The world's ``services["faults"]``: the plan, connection bookkeeping, world operations."""

    def __init__(self, world: World, close_connections: CloseConnections, narrate_to: IO[str] | None = None) -> None:
        self.world = world
        self.plan = FaultPlan()
        self._close = close_connections
        self._connections: dict[int, tuple[str, int]] = {}  # connection id -> (client id, broker id)
        self._prune_at = 1_024  # forget closed connections when the map reaches this size (issue 17, defect 6)
        self._loading_until: int | None = None
        self._start = world.now_ms()
        self._narrate_to = narrate_to
        self.requests: Counter[tuple[int, str]] = Counter()  # (broker id, API name) -> requests seen
        world.register_timed(self)

    @classmethod
    def install(cls, world: World, close_connections: CloseConnections,
                narrate_to: IO[str] | None = None) -> FaultController:
        existing = world.services.get(SERVICE_KEY)
        if isinstance(existing, FaultController):
            return existing
        controller = cls(world, close_connections, narrate_to)
        world.services[SERVICE_KEY] = controller
        return controller

    # -- per request ------------------------------------------------------------------------

    async def serve(self, ctx: RequestContext, request: Any, dispatch: Callable[[], Awaitable[Any]]) -> Any:
        self._connections[ctx.connection_id] = (ctx.client_id, ctx.broker.node_id)
        if len(self._connections) >= self._prune_at:
            self._forget_closed_connections()
        self.requests[ctx.broker.node_id, codec.API_NAMES.get(ctx.api_key, str(ctx.api_key))] += 1
        info = request_info(ctx, request)
        verdict = self.plan.decide(info)
        if verdict.untouched:
            return await dispatch()
        self._record_fired(info, verdict.error, verdict.delay_ms, verdict.throttle_ms)
        if verdict.delay_ms:
            await asyncio.sleep(verdict.delay_ms / 1000)
        if verdict.error is not None:
            body = error_response(ctx.api_key, ctx.api_version, request, verdict.error)
        else:
            body = await dispatch()
        if verdict.throttle_ms and _set_throttle(body, ctx.api_key, ctx.api_version, verdict.throttle_ms):
            await asyncio.sleep(verdict.throttle_ms / 1000)  # as a pre-KIP-219 broker: the answer waits
        return body

    @property
    def tracked_connections(self) -> int:
        """How many connections the controller remembers (open ones, and closed ones not yet forgotten)."""
        return len(self._connections)

    def _forget_closed_connections(self) -> None:
        """Keep only the connections still open, so a churn of clients does not grow the map forever.

        The server names its open connections to a close predicate (which here closes none); the next
        prune waits until the map has doubled, so the cost per request stays constant."""
        live: set[int] = set()

        def note(cid: int) -> bool:
            live.add(cid)
            return False  # close nothing

        self._close(note)
        self._connections = {cid: entry for cid, entry in self._connections.items() if cid in live}
        self._prune_at = max(1_024, 2 * len(self._connections))

    # -- request faults -----------------------------------------------------------------------

    def inject_error(self, api: int | str, error: int | str, *, count: int = 1, group_id: str | None = None,
                     member_id: str | None = None, broker: int | None = None) -> None:
        """Answer the next ``count`` matching requests of ``api`` with ``error``."""
        rule = ErrorRule(api_key_of(api), self._broker(broker), group_id, member_id, count, error_code_of(error))
        self.plan.add_error(rule)
        self._record("error", group_id, api=codec.API_NAMES[rule.api_key or 0], error=int(rule.error),
                     count=count, member_id=member_id, broker=broker)

    def add_latency(self, ms: int, *, api: int | str | None = None, broker: int | None = None,
                    count: int | None = None) -> None:
        """Delay the answer to matching requests by ``ms`` (all APIs and brokers unless narrowed)."""
        self._add_delay("latency", ms, api, broker, count, throttle=False)

    def throttle(self, ms: int, *, api: int | str | None = None, broker: int | None = None,
                 count: int | None = None) -> None:
        """Report ``throttle_time_ms=ms`` in matching responses and hold them that long."""
        self._add_delay("throttle", ms, api, broker, count, throttle=True)

    def _add_delay(self, kind: str, ms: int, api: int | str | None, broker: int | None, count: int | None,
                   *, throttle: bool) -> None:
        key = None if api is None else api_key_of(api)
        self.plan.add_delay(DelayRule(key, self._broker(broker), None, None, count, ms, throttle))
        self._record(kind, None, ms=ms, api=None if key is None else codec.API_NAMES[key], broker=broker,
                     count=count)

    def clear(self) -> None:
        """Drop every armed request fault (errors, latency, throttles)."""
        self.plan.clear()
        self._record("clear", None)

    # -- world faults ---------------------------------------------------------------------------

    def close_client_connections(self, client_id: str) -> int:
        """Close every connection whose requests carried ``client_id``; the count closed."""
        closed = self._close(lambda cid: self._connections.get(cid, ("", -1))[0] == client_id)
        self._record("close_connections", None, client_id=client_id, closed=closed)
        return closed

    def broker_down(self, broker: int) -> None:
        """Stop a broker: fenced in metadata, its connections closed, new requests refused."""
        self.world.nodes[self._node(broker)].up = False
        self.world.cluster.broker_stopped(broker)
        closed = self._close(lambda cid: self._connections.get(cid, ("", -1))[1] == broker)
        self._record("broker_down", None, broker=broker, closed=closed)

    def broker_up(self, broker: int) -> None:
        self.world.nodes[self._node(broker)].up = True
        self.world.cluster.broker_started(broker)
        self._record("broker_up", None, broker=broker)

    def move_coordinator(self, group_id: str, broker: int) -> None:
        """Make ``broker`` the group's coordinator: the old one answers NOT_COORDINATOR from now on."""
        overrides: dict[str, int] = self.world.services.setdefault("coordinator_overrides", {})
        overrides[group_id] = self._node(broker)
        self._record("move_coordinator", group_id, broker=broker)

    def load_in_progress(self, ms: int) -> None:
        """Answer group requests as a coordinator still loading its partition, for ``ms`` (world time)."""
        if ms <= 0:
            raise ValueError("a loading window must last at least 1 ms")
        service_of(self.world).coordinator.set_loading(True)
        self._loading_until = self.world.now_ms() + ms
        self._record("load_in_progress", None, ms=ms)
        self.world.wake()

    def delay_transaction_markers(self, ms: int) -> None:
        """Transactions ending from now on have their COMMIT/ABORT markers written ``ms`` later (world time), as a
        slow ``TransactionMarkerChannelManager``: meanwhile the transaction stays PrepareCommit/PrepareAbort and its
        producer's next InitProducerId, AddPartitionsToTxn or EndTxn gets CONCURRENT_TRANSACTIONS; 0 restores."""
        if ms < 0:
            raise ValueError("a marker delay cannot be negative")
        transactions_of(self.world).coordinator.marker_delay_ms = ms
        self._record("delay_transaction_markers", None, ms=ms)

    def force_rebalance(self, group_id: str) -> None:
        """A classic group starts a rebalance; a KIP-848 consumer group has none to start: its epoch is bumped."""
        if service_of(self.world).consumer.has_group(group_id):
            self.bump_epoch(group_id)
            return
        # The fault's row comes before its effect (issue 19: a narration told the rebalance, then its cause); a
        # request the coordinator will refuse (AdminError) is refused before anything is recorded.
        ready = self._classic_state_in(group_id, ("Stable", "CompletingRebalance"))
        if ready:
            self._record("force_rebalance", group_id)
        service_of(self.world).force_rebalance(group_id)
        if not ready:
            self._record("force_rebalance", group_id)

    def expire_member(self, group_id: str, member_id: str) -> None:
        """Run a classic member's session timeout now; a consumer group's member is fenced (:meth:`fence_member`)."""
        if service_of(self.world).consumer.has_group(group_id):
            self.fence_member(group_id, member_id)
            return
        ready = self._expirable(group_id, member_id)
        if ready:
            self._record("expire_member", group_id, member_id=member_id)
        service_of(self.world).expire_member(group_id, member_id)
        if not ready:
            self._record("expire_member", group_id, member_id=member_id)

    def _classic_state_in(self, group_id: str, states: tuple[str, ...]) -> bool:
        view = service_of(self.world).coordinator.group(group_id)
        return view is not None and view.state in states

    def _expirable(self, group_id: str, member_id: str) -> bool:
        """What ``admin.expire_member`` accepts: a known or pending member not parked in a JoinGroup/SyncGroup."""
        view = service_of(self.world).coordinator.group(group_id)
        if view is None:
            return False
        member = view.member(member_id)
        if member is None:
            return member_id in view.pending_members
        return not (member.awaiting_join or member.awaiting_sync)

    # -- KIP-848 consumer groups ------------------------------------------------------------------

    def fence_member(self, group_id: str, member_id: str) -> None:
        """Remove a consumer group member as a timeout would (tombstones, an epoch bump); its next
        heartbeat gets UNKNOWN_MEMBER_ID and it rejoins at epoch 0. NotFound for an unknown group or member."""
        if self._consumer_group(group_id).member(member_id) is None:
            raise NotFound(f"no member {member_id!r} in consumer group {group_id!r}")
        self._record("fence_member", group_id, member_id=member_id)
        service = service_of(self.world)
        now = self.world.now_ms()
        service.apply(service.consumer.fence_member(now, group_id, member_id, service.topics()))
        self.world.wake()

    def bump_epoch(self, group_id: str) -> int:
        """Bump a consumer group's epoch (state Assigning): the next heartbeat computes a new target
        assignment, which may move nothing. The new epoch; NotFound for an unknown consumer group."""
        epoch = self._consumer_group(group_id).group_epoch + 1
        self._record("bump_epoch", group_id, group_epoch=epoch)
        service = service_of(self.world)
        service.apply(service.consumer.bump_epoch(self.world.now_ms(), group_id))
        self.world.wake()
        return epoch

    def _consumer_group(self, group_id: str) -> ConsumerGroupView:
        view = service_of(self.world).consumer.group(group_id)
        if view is None:
            raise NotFound(f"no consumer group {group_id!r}")
        return view

    def _broker(self, broker: int | None) -> int | None:
        return None if broker is None else self._node(broker)

    def _node(self, broker: int) -> int:
        if broker not in self.world.nodes:
            raise ValueError(f"no broker {broker}; brokers are {sorted(self.world.nodes)}")
        return broker

    # -- Timed: the end of a loading window ------------------------------------------------

    def next_deadline(self) -> int | None:
        return self._loading_until

    def fire_timers(self, now_ms: int) -> None:
        if self._loading_until is not None and now_ms >= self._loading_until:
            self._loading_until = None
            service_of(self.world).coordinator.set_loading(False)
            self._record("load_complete", None)

    # -- recording ----------------------------------------------------------------------------

    def _record(self, kind: str, group_id: str | None, **detail: Any) -> None:
        kept = tuple((k, v) for k, v in detail.items() if v is not None)
        self._publish(FaultInjected(group_id or "", self.world.now_ms(), kind, kept))

    def _record_fired(self, info: RequestInfo, error: Any, delay_ms: int, throttle_ms: int) -> None:
        detail = (("api", codec.API_NAMES.get(info.api_key)), ("broker", info.broker_id),
                  ("client_id", info.client_id), ("member_id", info.member_id),
                  ("error", None if error is None else int(error)),
                  ("latency_ms", delay_ms or None), ("throttle_ms", throttle_ms or None))
        self._publish(FaultFired(info.group_id or "", self.world.now_ms(), "request", detail))

    def _publish(self, record: FaultInjected) -> None:
        service_of(self.world).publish(record)
        if self._narrate_to is not None and "narrator" not in self.world.services:  # else the narrator tells it
            when = (record.ts_ms - self._start) / 1000
            self._narrate_to.write(f"[{when:8.3f}s] {record.group_id or '*'}: {describe(record)}\n")
            self._narrate_to.flush()
