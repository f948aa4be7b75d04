"""A canary group: well-behaved members that must never be lost while something else misbehaves.

The canary runs in its own thread with its own event loop, so a server that stalls its loop cannot
also stall the canary (with an in-process server the two share only the GIL). It runs

* a classic group ``<prefix>-classic`` of ``classic_members`` raw-protocol members (JoinGroup v5,
  SyncGroup v3, Heartbeat v3; session timeout ``session_timeout_ms``, 6000 ms by default: Kafka's
  ``group.min.session.timeout.ms``), heartbeating every ``heartbeat_interval_ms``;
* a KIP-848 group ``<prefix>-consumer`` of ``consumer_members`` members (ConsumerGroupHeartbeat v1)
  subscribed to ``topic`` (created by the canary), heartbeating at the same pace;

and records every heartbeat's latency, every error, every rebalance and every lost member once
the groups are stable. Usage, with the server on the test's loop (pytest-asyncio)::

    from tests.support.canary import Canary

    async with Canary(server.bootstrap_servers) as canary:   # waits until both groups are stable
        await misbehave()                                    # the misbehaviour under test
    canary.report.assert_healthy()   # no member lost, no rebalance, every heartbeat answered NONE
    print(canary.report.summary())   # heartbeats, p50/p99/max latency in ms

From plain (non-async) code, e.g. a benchmark whose server runs in another thread or process:
``canary.start(); canary.wait_stable_blocking(); ...; report = canary.stop_blocking()``.
Give the server ``GroupConfig(initial_rebalance_delay_ms=0)`` to skip Kafka's 3 s first-join delay.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import struct
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode

FIND_COORDINATOR, JOIN, SYNC, HEARTBEAT, LEAVE, CREATE_TOPICS, CONSUMER_HEARTBEAT = 10, 11, 14, 12, 13, 19, 68
# opens a ready connection to (host, port): asyncio.open_connection, or one that also does TLS and SASL
Connector = Callable[[str, int], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]
_LOST = frozenset({ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.ILLEGAL_GENERATION})


@dataclass
class CanaryReport:
    """What the canary saw after its groups became stable (earlier join noise is not counted)."""

    latencies_ms: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # unexpected answers or connection failures
    rebalances: int = 0
    rebalance_causes: list[str] = field(default_factory=list)  # which member saw what
    members_lost: list[str] = field(default_factory=list)

    def percentile(self, p: float) -> float:
        if not self.latencies_ms:
            return float("nan")
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]

    def summary(self) -> str:
        lat = self.latencies_ms
        median = statistics.median(lat) if lat else float("nan")
        return (f"heartbeats={len(lat)} p50={median:.1f}ms p99={self.percentile(99):.1f}ms "
                f"max={max(lat, default=float('nan')):.1f}ms rebalances={self.rebalances} "
                f"lost={len(self.members_lost)} errors={len(self.errors)}")

    def assert_healthy(self) -> None:
        problems = self.errors + [f"member lost: {m}" for m in self.members_lost]
        if self.rebalances:
            problems.append(f"{self.rebalances} rebalance(s) after the groups were stable: {self.rebalance_causes}")
        if not self.latencies_ms:
            problems.append("no heartbeat was answered")
        assert not problems, "the canary was hurt: " + "; ".join(problems[:10])


class _Conn:
    """One raw connection: a request, then its answer (correlation id checked)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, timeout: float) -> None:
        self._reader, self._writer, self._timeout = reader, writer, timeout
        self._correlation = 0

    @classmethod
    async def open(cls, host: str, port: int, timeout: float, connect: Connector | None = None) -> _Conn:
        reader, writer = await asyncio.wait_for((connect or asyncio.open_connection)(host, port), timeout)
        return cls(reader, writer, timeout)

    async def request(self, api_key: int, version: int, **fields: Any) -> Any:
        self._correlation += 1
        self._writer.write(codec.encode_request(codec.new_request(api_key, version, **fields), self._correlation,
                                                "canary"))
        await self._writer.drain()
        head = await asyncio.wait_for(self._reader.readexactly(4), self._timeout)
        payload = await asyncio.wait_for(self._reader.readexactly(struct.unpack(">i", head)[0]), self._timeout)
        response = codec.decode_response(api_key, version, payload)
        if response.header.correlation_id != self._correlation:
            raise AssertionError(f"correlation id {response.header.correlation_id} != {self._correlation}")
        return response

    def close(self) -> None:
        self._writer.close()


class Canary:
    def __init__(self, bootstrap: str, *, prefix: str = "canary", classic_members: int = 2,
                 consumer_members: int = 1, session_timeout_ms: int = 6_000, heartbeat_interval_ms: int = 200,
                 topic: str = "canary-topic", connect: Connector | None = None) -> None:
        host, port = bootstrap.split(",")[0].rsplit(":", 1)
        self._connect = connect  # e.g. TLS and a SASL login on a secure listener (tests/security)
        self._address = (host, int(port))
        self.prefix, self.topic = prefix, topic
        self.classic_members, self.consumer_members = classic_members, consumer_members
        self.session_timeout_ms, self.interval = session_timeout_ms, heartbeat_interval_ms / 1000
        self.report = CanaryReport()
        self._stable: set[str] = set()
        self._stable_event = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None

    # -- control, from any thread ------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="canary", daemon=True)
        self._thread.start()

    def wait_stable_blocking(self, timeout: float = 30.0) -> None:
        if not self._stable_event.wait(timeout):
            raise AssertionError(f"the canary's groups were not stable within {timeout}s: {self.report.errors}")
        if self._failure is not None:
            raise AssertionError(f"the canary failed: {self._failure!r}")

    def stop_blocking(self) -> CanaryReport:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(30)
        return self.report

    async def wait_stable(self, timeout: float = 30.0) -> None:
        await asyncio.to_thread(self.wait_stable_blocking, timeout)

    async def stop(self) -> CanaryReport:
        return await asyncio.to_thread(self.stop_blocking)

    async def __aenter__(self) -> Canary:
        self.start()
        await self.wait_stable()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- the canary's own thread ---------------------------------------------------------

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # reported through wait_stable / the report, never lost
            self._failure = exc
            self.report.errors.append(f"canary crashed: {exc!r}")
            self._stable_event.set()

    async def _main(self) -> None:
        timeout = self.session_timeout_ms / 1000 * 3
        await self._create_topic(timeout)
        members = [self._classic(f"classic-{i}", timeout) for i in range(self.classic_members)]
        members += [self._consumer(f"consumer-{i}", timeout) for i in range(self.consumer_members)]
        await asyncio.gather(*members)

    def _mark_stable(self, name: str) -> None:
        self._stable.add(name)
        if len(self._stable) == self.classic_members + self.consumer_members:
            self._stable_event.set()

    @property
    def stable(self) -> bool:
        return self._stable_event.is_set()

    async def _coordinator(self, group: str, timeout: float) -> _Conn:
        boot = await _Conn.open(*self._address, timeout, self._connect)
        try:
            found = await boot.request(FIND_COORDINATOR, 3, key=group, key_type=0)
        finally:
            boot.close()
        if found.error_code != ErrorCode.NONE:
            raise AssertionError(f"FindCoordinator({group}) answered {found.error_code}")
        return await _Conn.open(found.host, found.port, timeout, self._connect)

    async def _create_topic(self, timeout: float) -> None:
        conn = await _Conn.open(*self._address, timeout, self._connect)
        topic = codec.data_class(codec.request_type(CREATE_TOPICS), "CreatableTopic")
        await conn.request(CREATE_TOPICS, 5, topics=[topic(name=self.topic, num_partitions=2, replication_factor=1,
                                                           assignments=[], configs=[])], timeout_ms=10_000)
        conn.close()  # TOPIC_ALREADY_EXISTS is as good as NONE here

    async def _beat(self, conn: _Conn, api_key: int, version: int, **fields: Any) -> Any:
        started = time.perf_counter()
        response = await conn.request(api_key, version, **fields)
        if self.stable:
            self.report.latencies_ms.append((time.perf_counter() - started) * 1000)
        return response

    async def _pause(self) -> None:
        await asyncio.to_thread(self._stopping.wait, self.interval)

    # -- a classic member ----------------------------------------------------------------------

    async def _classic(self, name: str, timeout: float) -> None:
        group = f"{self.prefix}-classic"
        conn = await self._coordinator(group, timeout)
        member_id, generation = "", -1
        try:
            while not self._stopping.is_set():
                if generation < 0:
                    member_id, generation = await self._join_and_sync(conn, group, member_id)
                    self._mark_stable(name)
                    continue
                await self._pause()
                if self._stopping.is_set():  # a last heartbeat could see another canary member's leave as a rebalance
                    break
                hb = await self._beat(conn, HEARTBEAT, 3, group_id=group, generation_id=generation,
                                      member_id=member_id, group_instance_id=None)
                generation = self._classic_verdict(name, hb.error_code, generation)
                if hb.error_code in _LOST:
                    member_id = ""
            with contextlib.suppress(Exception):
                member = codec.data_class(codec.request_type(LEAVE), "MemberIdentity")
                await conn.request(LEAVE, 3, group_id=group, members=[member(member_id=member_id)])
        finally:
            conn.close()

    def _classic_verdict(self, name: str, error: int, generation: int) -> int:
        if error == ErrorCode.NONE:
            return generation
        if not self.stable:
            return -1  # the members of the first generation still join one after the other
        if error == ErrorCode.REBALANCE_IN_PROGRESS:
            self.report.rebalances += 1
            self.report.rebalance_causes.append(f"{name}: Heartbeat answered REBALANCE_IN_PROGRESS")
        elif error in _LOST:
            self.report.members_lost.append(f"{name} ({ErrorCode(error).name})")
        else:
            self.report.errors.append(f"{name}: Heartbeat answered {error}")
        return -1  # join again

    async def _join_and_sync(self, conn: _Conn, group: str, member_id: str) -> tuple[str, int]:
        protocol = codec.data_class(codec.request_type(JOIN), "JoinGroupRequestProtocol")
        while True:
            joined = await conn.request(
                JOIN, 5, group_id=group, session_timeout_ms=self.session_timeout_ms, rebalance_timeout_ms=30_000,
                member_id=member_id, group_instance_id=None, protocol_type="consumer",
                protocols=[protocol(name="range", metadata=b"")])
            member_id = joined.member_id or member_id
            if joined.error_code == ErrorCode.MEMBER_ID_REQUIRED:
                continue
            if joined.error_code != ErrorCode.NONE:
                raise AssertionError(f"JoinGroup answered {joined.error_code}")
            assignment = codec.data_class(codec.request_type(SYNC), "SyncGroupRequestAssignment")
            assignments = [assignment(member_id=m.member_id, assignment=b"") for m in joined.members]
            synced = await conn.request(SYNC, 3, group_id=group, generation_id=joined.generation_id,
                                        member_id=member_id, group_instance_id=None, assignments=assignments)
            if synced.error_code == ErrorCode.NONE:
                return member_id, joined.generation_id
            if synced.error_code != ErrorCode.REBALANCE_IN_PROGRESS:
                raise AssertionError(f"SyncGroup answered {synced.error_code}")

    # -- a KIP-848 member -------------------------------------------------------------------------

    async def _consumer(self, name: str, timeout: float) -> None:
        group = f"{self.prefix}-consumer"
        conn = await self._coordinator(group, timeout)
        member_id, epoch = str(uuid.uuid4()), 0
        try:
            while not self._stopping.is_set():
                hb = await self._beat(conn, CONSUMER_HEARTBEAT, 1, group_id=group, member_id=member_id,
                                      member_epoch=epoch, rebalance_timeout_ms=30_000,
                                      subscribed_topic_names=[self.topic], topic_partitions=[] if epoch == 0 else None)
                epoch = self._consumer_verdict(name, hb, epoch)
                if hb.assignment is not None and hb.assignment.topic_partitions:
                    self._mark_stable(name)  # the target assignment reached it (at most once per interval)
                await self._pause()
            with contextlib.suppress(Exception):
                await conn.request(CONSUMER_HEARTBEAT, 1, group_id=group, member_id=member_id, member_epoch=-1)
        finally:
            conn.close()

    def _consumer_verdict(self, name: str, hb: Any, epoch: int) -> int:
        if hb.error_code in _LOST:
            self.report.members_lost.append(f"{name} ({ErrorCode(hb.error_code).name})")
            return 0
        if hb.error_code != ErrorCode.NONE:
            self.report.errors.append(f"{name}: ConsumerGroupHeartbeat answered {hb.error_code}")
            return epoch
        if self.stable and epoch not in (0, hb.member_epoch):
            self.report.rebalances += 1  # a new epoch: the group's membership or assignment changed
            self.report.rebalance_causes.append(f"{name}: epoch {epoch} -> {hb.member_epoch}")
        return int(hb.member_epoch)
