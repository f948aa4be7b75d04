"""``GroupMember``: a light asyncio group member built on :class:`MemberState`.

One TCP connection per member (a parked JoinGroup blocks the connection it came on, so
members cannot share one). Built for load tests with thousands of members in one
process: no task per member while it is stable -- heartbeats are ``call_later`` timers
whose responses arrive as future callbacks; a task exists only while a (re)join runs.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from rebalance_lab.clients.assignors.types import Assignor, ClusterView, TopicPartition
from rebalance_lab.clients.member import calls as c
from rebalance_lab.clients.member import leader, wire
from rebalance_lab.clients.member.connection import Connection, ConnectionLost, split_bootstrap
from rebalance_lab.clients.member.state import IllegalTransition, MemberState, Phase
from rebalance_lab.clients.member.subscription import SubscriptionSpec
from rebalance_lab.protocol import consumer_protocol as cp
from rebalance_lab.protocol.errors import ErrorCode

AssignedCallback = Callable[[c.Assigned], None]
_PREFERRED = {wire.JOIN_GROUP: 9, wire.SYNC_GROUP: 5, wire.HEARTBEAT: 4, wire.LEAVE_GROUP: 5,
              wire.FIND_COORDINATOR: 4, wire.METADATA: 12}


class GroupMemberError(Exception):
    """The member hit a fatal error (Java would throw it from ``poll``)."""

    def __init__(self, error: ErrorCode, message: str = "") -> None:
        super().__init__(message or error.name)
        self.error = error


class GroupMember:
    """A consumer-protocol member of ``group_id``; it leads with our assignors when elected."""

    def __init__(
        self,
        bootstrap: str,
        group_id: str,
        topics: Sequence[str],
        assignors: Sequence[str | Assignor] = ("range",),
        *,
        client_id: str = "rebalance-lab-member",
        group_instance_id: str | None = None,
        session_timeout_ms: int = 45_000,
        rebalance_timeout_ms: int = 300_000,
        heartbeat_interval_ms: int = 3_000,
        join_version: int | None = None,
        subscription_version: int = cp.HIGHEST_VERSION,
        rack_id: str | None = None,
        auto_rejoin: bool = True,
        retry_backoff_ms: int = 100,
        request_timeout_ms: int = 30_000,
        on_assigned: AssignedCallback | None = None,
    ) -> None:
        self.bootstrap = bootstrap
        self.group_id = group_id
        self.client_id = client_id
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.join_version = join_version
        self.auto_rejoin = auto_rejoin
        self.retry_backoff_ms = retry_backoff_ms
        self.request_timeout_ms = request_timeout_ms
        self.on_assigned = on_assigned
        self._assignors = {a if isinstance(a, str) else a.name: a for a in assignors}
        spec = SubscriptionSpec(tuple(topics), tuple(self._assignors), subscription_version, rack_id)
        self.state = MemberState(
            session_timeout_ms=session_timeout_ms,
            rebalance_timeout_ms=rebalance_timeout_ms,
            subscription=spec,
            group_instance_id=group_instance_id,
        )
        self._conn: Connection | None = None
        self._heartbeat: asyncio.TimerHandle | None = None
        self._rejoin: asyncio.Task[Any] | None = None
        self._joining: asyncio.Future[tuple[TopicPartition, ...]] | None = None
        self._closed = False
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self.heartbeats_sent = 0
        self.last_error: ErrorCode | None = None

    # -- what tests and benchmarks read ---------------------------------------------------

    @property
    def member_id(self) -> str:
        return self.state.member_id

    @property
    def generation_id(self) -> int:
        return self.state.generation_id

    @property
    def is_leader(self) -> bool:
        return self.state.is_leader

    @property
    def phase(self) -> Phase:
        return self.state.phase

    @property
    def assignment(self) -> tuple[TopicPartition, ...]:
        return self.state.owned

    @property
    def protocol_name(self) -> str | None:
        return self.state.protocol_name

    # -- connection and coordinator ----------------------------------------------------------

    async def connect(self) -> None:
        """Bootstrap, FindCoordinator (retrying while the broker creates its offsets topic),
        and keep one connection to the coordinator."""
        if self._conn is not None and self._conn.is_open:
            return
        host, port = split_bootstrap(self.bootstrap)[0]
        conn = await self._open(host, port)
        # a fresh broker answers COORDINATOR_NOT_AVAILABLE while it creates __consumer_offsets
        for _ in range(max(1, self.request_timeout_ms // max(1, self.retry_backoff_ms))):
            version = conn.pick(wire.FIND_COORDINATOR, _PREFERRED[wire.FIND_COORDINATOR])
            response = await self._timed(conn.send(wire.find_coordinator_request(self.group_id, version)))
            info = wire.coordinator_info(response, version)
            if info.error == ErrorCode.NONE:
                break
            await asyncio.sleep(self.retry_backoff_ms / 1000)
        else:
            conn.close()
            raise GroupMemberError(info.error, f"FindCoordinator kept failing with {info.error.name}")
        if (info.host, info.port) != (host, port):
            conn.close()
            conn = await self._open(info.host, info.port)
        self._conn = conn

    async def _open(self, host: str, port: int) -> Connection:
        conn = await Connection.open(host, port, self.client_id)
        await self._timed(conn.negotiate())
        return conn

    async def _timed(self, awaitable: Awaitable[Any], extra_ms: int = 0) -> Any:
        return await asyncio.wait_for(awaitable, (self.request_timeout_ms + extra_ms) / 1000)

    def _connection(self) -> Connection:
        if self._conn is None or not self._conn.is_open:
            raise ConnectionLost("not connected to the coordinator")
        return self._conn

    def _version(self, api_key: int) -> int:
        if api_key == wire.JOIN_GROUP and self.join_version is not None:
            return self.join_version
        return self._connection().pick(api_key, _PREFERRED[api_key])

    async def _rediscover(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        await self.connect()

    # -- join and sync --------------------------------------------------------------------------

    async def join(self) -> tuple[TopicPartition, ...]:
        """Join (or rejoin) and sync; returns this member's partitions. KIP-429: if the
        cooperative assignment revoked something, it rejoins at once, as Java does.
        A call while a join is already running (e.g. an automatic rejoin) waits for that
        one instead of starting a second: the state machine allows one join at a time."""
        if self._joining is not None and not self._joining.done():
            return await asyncio.shield(self._joining)
        self._joining = asyncio.get_running_loop().create_future()
        try:
            partitions = await self._join_once()
        except asyncio.CancelledError:
            self._joining.cancel()
            raise
        except Exception as exc:
            self._joining.set_exception(exc)
            self._joining.exception()  # retrieved: only the caller re-raises it
            raise
        self._joining.set_result(partitions)
        return partitions

    async def _join_once(self) -> tuple[TopicPartition, ...]:
        self.stop_heartbeats()
        await self.connect()
        step: Any = c.SendJoin(self.state.start_join())
        while True:
            step = await self._advance(step)
            if isinstance(step, c.Assigned):
                self._assigned(step)
                if not step.rejoin_needed:
                    return step.partitions
                step = c.SendJoin(self.state.start_join("revoked partitions (KIP-429)"))

    async def _advance(self, step: Any) -> Any:
        if isinstance(step, c.SendJoin):
            return await self._send_join(step.call)
        if isinstance(step, c.SendSync):
            return await self._send_sync(step.call)
        if isinstance(step, c.RunAssignor):
            return c.SendSync(await self._lead(step))
        if isinstance(step, c.Retry):
            await asyncio.sleep(self.retry_backoff_ms / 1000)
            return c.SendJoin(self.state.join_call())
        if isinstance(step, c.Rediscover):
            await self._rediscover()
            return c.SendJoin(self.state.start_join())
        if isinstance(step, c.Failed):
            self.last_error = step.error
            raise GroupMemberError(step.error)
        raise TypeError(f"unexpected step {step!r}")

    async def _send_join(self, call: c.JoinGroupCall) -> c.JoinStep:
        request = wire.join_request(self.group_id, call, self._version(wire.JOIN_GROUP))
        # a JoinGroup parks for up to the rebalance timeout (or the initial delay)
        response = await self._timed(self._connection().send(request), call.rebalance_timeout_ms)
        return self.state.on_join_result(wire.join_result(response))

    async def _send_sync(self, call: c.SyncGroupCall) -> c.SyncStep:
        request = wire.sync_request(self.group_id, call, self._version(wire.SYNC_GROUP))
        response = await self._timed(self._connection().send(request), self.state.rebalance_timeout_ms)
        return self.state.on_sync_result(wire.sync_result(response))

    async def _lead(self, step: c.RunAssignor) -> c.SyncGroupCall:
        try:
            group = leader.group_subscription(step.members)
            assignor = self._assignor(step.protocol_name)
            cluster = await self.fetch_cluster(leader.subscribed_topics(group))
            assignments = leader.compute_assignment(assignor, cluster, group)
        except (cp.ConsumerProtocolError, LookupError) as exc:
            self.state.assignment_failed()
            raise GroupMemberError(ErrorCode.UNKNOWN_SERVER_ERROR, f"leader assignment failed: {exc}") from exc
        return self.state.on_assignment(assignments)

    def _assignor(self, name: str) -> Assignor:
        chosen = self._assignors.get(name)
        if chosen is None:
            raise LookupError(f"the group chose protocol {name!r}, which this member did not offer")
        return leader.resolve_assignor(chosen) if isinstance(chosen, str) else chosen

    async def fetch_cluster(self, topics: Sequence[str]) -> ClusterView:
        """Metadata for ``topics`` as a :class:`ClusterView` (partition counts and racks)."""
        conn = self._connection()
        version = conn.pick(wire.METADATA, _PREFERRED[wire.METADATA])
        response = await self._timed(conn.send(wire.metadata_request(topics, version)))
        cluster: ClusterView = wire.cluster_view(response)
        return cluster

    def _assigned(self, step: c.Assigned) -> None:
        if self.on_assigned is not None:
            self.on_assigned(step)
        still_waiting = []
        for generation, future in self._waiters:
            if step.generation_id >= generation and not future.done():
                future.set_result(None)
            elif not future.done():
                still_waiting.append((generation, future))
        self._waiters = still_waiting
        if self.heartbeat_interval_ms > 0:
            self.start_heartbeats()

    async def wait_for_generation(self, generation: int, timeout_s: float = 30.0) -> None:
        """Until this member is stable at ``generation`` or later (e.g. after an auto-rejoin)."""
        if self.state.phase is Phase.STABLE and self.state.generation_id >= generation:
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((generation, future))
        await asyncio.wait_for(future, timeout_s)

    # -- heartbeats (timer driven) --------------------------------------------------------------

    def start_heartbeats(self) -> None:
        self.stop_heartbeats()
        loop = asyncio.get_running_loop()
        self._heartbeat = loop.call_later(self.heartbeat_interval_ms / 1000, self._heartbeat_due)

    def stop_heartbeats(self) -> None:
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            self._heartbeat = None

    @property
    def heartbeating(self) -> bool:
        return self._heartbeat is not None

    def _heartbeat_due(self) -> None:
        self._heartbeat = None
        call = self.state.heartbeat_call()
        if call is None or self._closed:
            return
        if self._conn is None or not self._conn.is_open:
            # the coordinator closed the connection: rediscover it, as Java does
            if self.auto_rejoin:
                self._spawn_rejoin(c.Rediscover(ErrorCode.COORDINATOR_NOT_AVAILABLE))
            return
        request = wire.heartbeat_request(self.group_id, call, self._conn.pick(wire.HEARTBEAT, 4))
        self.heartbeats_sent += 1
        self._conn.send(request).add_done_callback(lambda f: self._heartbeat_done(call, f))

    def _heartbeat_done(self, call: c.HeartbeatCall, future: asyncio.Future[Any]) -> None:
        if future.cancelled():
            return
        failed = future.exception() is not None  # also marks the exception as retrieved
        if self._closed:
            return
        if failed:
            # the connection broke: Java marks the coordinator unknown and rediscovers it
            if self.auto_rejoin:
                self._spawn_rejoin(c.Rediscover(ErrorCode.COORDINATOR_NOT_AVAILABLE))
            return
        step = self.state.on_heartbeat_result(call, wire.heartbeat_result(future.result()))
        if isinstance(step, c.HeartbeatOk):
            self.start_heartbeats()
        elif isinstance(step, c.RejoinNeeded | c.Rediscover):
            self.last_error = step.error
            if self.auto_rejoin:
                self._spawn_rejoin(step)
        elif isinstance(step, c.Failed):
            self.last_error = step.error

    def _spawn_rejoin(self, step: c.RejoinNeeded | c.Rediscover) -> None:
        if self._rejoin is not None and not self._rejoin.done():
            return

        async def rejoin() -> None:
            if isinstance(step, c.Rediscover):
                await self._rediscover()
            with contextlib.suppress(GroupMemberError, ConnectionError, asyncio.TimeoutError, IllegalTransition):
                await self.join()

        self._rejoin = asyncio.get_running_loop().create_task(rejoin())

    # -- leaving -------------------------------------------------------------------------------------

    async def leave(self, reason: str | None = None) -> ErrorCode | None:
        """LeaveGroup for this member (its own entry's error), or None if it held no id."""
        self.stop_heartbeats()
        await self._cancel_rejoin()
        call = self.state.leave_call(reason)
        if call is None:
            return None
        conn = self._connection()
        version = conn.pick(wire.LEAVE_GROUP, _PREFERRED[wire.LEAVE_GROUP])
        response = await self._timed(conn.send(wire.leave_request(self.group_id, [call], version)))
        if version >= 3 and response.error_code == 0 and response.members:
            return ErrorCode(response.members[0].error_code)
        return ErrorCode(response.error_code)

    async def close(self, leave: bool = False) -> None:
        """Stop; ``leave=False`` just drops the connection (a crash: the session times out)."""
        self._closed = True
        if leave and self._conn is not None and self._conn.is_open:
            with contextlib.suppress(ConnectionError, asyncio.TimeoutError):
                await self.leave()
        self.stop_heartbeats()
        await self._cancel_rejoin()
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        self.state.reset()

    async def _cancel_rejoin(self) -> None:
        task = self._rejoin
        if task is not None and not task.done() and task is not asyncio.current_task():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def __aenter__(self) -> GroupMember:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close(leave=True)
