"""Fetch (1), v4-18: read partition logs, long-poll, incremental fetch sessions.

Follows ``KafkaApis.handleFetchRequest``, ``ReplicaManager.fetchMessages`` /
``readFromLog`` and ``DelayedFetch``:

* the request becomes a fetch-session context (KIP-227, ``fetch_sessions.py``);
* each partition is read from the fetch offset up to the high watermark
  (read_uncommitted) or last stable offset (read_committed), whole batches, at most
  ``partition_max_bytes`` and, over the response, ``max_bytes``; the first non-empty
  partition always returns at least one whole batch (KIP-74);
* errors per partition: UNKNOWN_TOPIC_OR_PARTITION (v4-12) / UNKNOWN_TOPIC_ID (v13+)
  (these with an empty aborted-transactions list, as Kafka 4.4 sends),
  NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH (v9+ leader
  epoch), OFFSET_OUT_OF_RANGE; an errored partition has -1 offsets and no records;
* the response is sent at once when ``max_wait_ms <= 0``, nothing is fetched, at
  least ``min_bytes`` are readable or any partition has an error; otherwise the
  request waits until an append makes ``min_bytes`` readable, a partition errors
  (e.g. leadership moved) or ``max_wait_ms`` passes, then is read again;
* v16+: NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH carry the KIP-951 leader hint.

The long poll waits in wall-clock time even on a manual clock (clients time their
requests by the wall clock); it is woken by appends, not by polling.
"""

from __future__ import annotations

import asyncio
import struct
import uuid
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, TypeVar

from rebalance_lab.coordinator.cluster import PartitionInfo, TopicInfo
from rebalance_lab.coordinator.dataplane import dataplane, leadership_error
from rebalance_lab.coordinator.fetch_sessions import (
    FetchContext,
    FetchKey,
    PartitionOutcome,
    PartitionRequest,
)
from rebalance_lab.coordinator.handlers import authz
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.coordinator.handlers.leaders import current_leader, node_endpoints
from rebalance_lab.coordinator.handlers.steps import STEP
from rebalance_lab.coordinator.logs import PartitionLog
from rebalance_lab.coordinator.producer_state import AbortedTxn
from rebalance_lab.coordinator.world import World
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode, KafkaError

API_KEY = 1
_RESPONSE = codec.response_type(API_KEY)
_TOPIC = _RESPONSE.FetchableTopicResponse
_PARTITION = _TOPIC.PartitionData
_LEADER = _PARTITION.LeaderIdAndEpoch
_ABORTED = _PARTITION.AbortedTransaction
_BATCH_HEAD = struct.Struct(">qi")  # base offset, length
_LAST_DELTA = struct.Struct(">i")  # at byte 23 of a v2 batch
_ENDPOINT = _RESPONSE.NodeEndpoint
_READ_COMMITTED = 1
_LEADER_HINT_ERRORS = (ErrorCode.NOT_LEADER_FOR_PARTITION, ErrorCode.FENCED_LEADER_EPOCH)
_NEVER_WRITTEN = PartitionLog()  # read only (_log_for_read)
_FREE_SLICE = 2_000  # entries freed between two turns of the loop
T = TypeVar("T")


@dataclass(frozen=True)
class _Read:
    error: ErrorCode
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    records: bytes = b""
    leader: PartitionInfo | None = None
    unknown: bool = False  # rejected before the read (unknown topic/partition), as KafkaApis does
    aborted: tuple[AbortedTxn, ...] = ()  # read_committed: the aborted transactions in the data read

    def outcome(self) -> PartitionOutcome:
        return PartitionOutcome(self.error, self.high_watermark, self.log_start_offset, len(self.records))


# -- the long-poll notifier (the only asyncio in the data plane) -----------------------


class FetchWaiters:
    """Wakes parked Fetch requests when any log is appended to or the cluster changes."""

    def __init__(self) -> None:
        self._events: set[asyncio.Event] = set()

    def notify(self, *_args: object) -> None:
        for event in self._events:
            event.set()

    async def wait(self, timeout_s: float) -> None:
        event = asyncio.Event()
        self._events.add(event)
        try:
            await asyncio.wait_for(event.wait(), max(0.0, timeout_s))
        except TimeoutError:
            pass
        finally:
            self._events.discard(event)


def waiters(world: World) -> FetchWaiters:
    found = world.services.get("fetch_waiters")
    if isinstance(found, FetchWaiters):
        return found
    created = FetchWaiters()
    world.services["fetch_waiters"] = created
    dataplane(world).logs.on_append(created.notify)
    world.cluster.on_change(created.notify)
    return created


# -- reading -----------------------------------------------------------------------


def _topic_of(world: World, ref: str | uuid.UUID) -> TopicInfo | None:
    if isinstance(ref, uuid.UUID):
        return world.cluster.topic_by_id(ref)
    return world.cluster.topics.get(ref)


def _locate(ctx: RequestContext, key: FetchKey) -> tuple[TopicInfo, PartitionInfo]:
    ref, index = key
    if isinstance(ref, str) and not authz.permits(ctx, authz.READ, authz.TOPIC, ref):
        raise KafkaError(ErrorCode.TOPIC_AUTHORIZATION_FAILED)  # KafkaApis: READ, before the topic's existence
    info = _topic_of(ctx.world, ref)
    if info is not None and not authz.permits(ctx, authz.READ, authz.TOPIC, info.name):
        raise KafkaError(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    if info is None:
        missing = ErrorCode.UNKNOWN_TOPIC_ID if isinstance(ref, uuid.UUID) else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        raise KafkaError(missing)
    if not 0 <= index < len(info.partitions):
        raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    return info, info.partitions[index]


def _log_for_read(world: World, info: TopicInfo, partition: PartitionInfo) -> PartitionLog:
    """The partition's log, or an empty one when nothing was ever written: a read creates no log, so a Fetch
    over 200,000 unused partitions leaves no 200,000 new objects for the collector to go through after it."""
    found = dataplane(world).logs.existing(info.topic_id, partition.partition)
    return _NEVER_WRITTEN if found is None else found


def _read_one(ctx: RequestContext, key: FetchKey, want: PartitionRequest, max_bytes: int, min_one: bool,
              committed: bool) -> _Read:
    try:
        info, partition = _locate(ctx, key)
    except KafkaError as exc:
        return _Read(exc.code, unknown=True)
    error = leadership_error(ctx.broker.node_id, partition, want.current_leader_epoch)
    if error != ErrorCode.NONE:
        return _Read(error, leader=partition)
    log = _log_for_read(ctx.world, info, partition)
    upper = log.last_stable_offset if committed else log.high_watermark
    try:
        records = log.read(want.fetch_offset, min(want.max_bytes, max_bytes), min_one, upper)
    except KafkaError as exc:
        return _Read(exc.code)
    aborted = tuple(log.aborted_transactions(want.fetch_offset, _end_of(records))) if committed and records else ()
    return _Read(ErrorCode.NONE, log.high_watermark, log.last_stable_offset, log.log_start_offset, records,
                 aborted=aborted)


def _end_of(records: bytes) -> int:
    """The offset after the last batch read (``LogSegment.fetchUpperBoundOffset`` bounds the aborted list)."""
    at, end = 0, 0
    while at + _BATCH_HEAD.size <= len(records):
        base, length = _BATCH_HEAD.unpack_from(records, at)
        (last_delta,) = _LAST_DELTA.unpack_from(records, at + 23)
        end = base + last_delta + 1
        at += 12 + length
    return end


Plan = list[tuple[FetchKey, PartitionRequest]]


async def _read_all(ctx: RequestContext, request: Any, plan: Plan) -> dict[FetchKey, _Read]:
    """``ReplicaManager.readFromLog``: a response-wide byte budget, min-one-batch until data is found."""
    limit = int(getattr(request, "max_bytes", 0x7FFFFFFF))
    min_one = True
    committed = getattr(request, "isolation_level", 0) == _READ_COMMITTED
    reads: dict[FetchKey, _Read] = {}
    for done, (key, want) in enumerate(plan, 1):
        if done % STEP == 0:  # each partition is read on its own, as ReplicaManager does: let others in
            await asyncio.sleep(0)
        read = _read_one(ctx, key, want, limit, min_one, committed)
        if read.records:
            min_one = False
        limit = max(0, limit - len(read.records))
        reads[key] = read
    return reads


def _readable_bytes(ctx: RequestContext, plan: Plan, committed: bool) -> int | None:
    """``DelayedFetch.tryComplete``: bytes now readable, or None when a partition errors."""
    total = 0
    for key, want in plan:
        try:
            info, partition = _locate(ctx, key)
        except KafkaError:
            return None
        if leadership_error(ctx.broker.node_id, partition, want.current_leader_epoch) != ErrorCode.NONE:
            return None
        log = _log_for_read(ctx.world, info, partition)
        upper = log.last_stable_offset if committed else log.high_watermark
        if not log.log_start_offset <= want.fetch_offset <= log.log_end_offset:
            return None
        total += min(want.max_bytes, log.bytes_available(want.fetch_offset, upper))
    return total


def _respond_now(request: Any, plan: list[Any], reads: dict[FetchKey, _Read]) -> bool:
    if request.max_wait_ms <= 0 or not plan:
        return True
    if any(r.error != ErrorCode.NONE for r in reads.values()):
        return True
    return sum(len(r.records) for r in reads.values()) >= int(request.min_bytes)


async def _long_poll(ctx: RequestContext, request: Any, plan: Plan) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + request.max_wait_ms / 1000.0
    committed = getattr(request, "isolation_level", 0) == _READ_COMMITTED
    notifier = waiters(ctx.world)
    while True:
        readable = _readable_bytes(ctx, plan, committed)
        if readable is None or readable >= request.min_bytes:
            return
        remaining = deadline - loop.time()
        if remaining <= 0:
            return
        await notifier.wait(remaining)


# -- request parsing -----------------------------------------------------------------


async def _fetch_data(ctx: RequestContext, request: Any) -> list[tuple[FetchKey, PartitionRequest]]:
    by_id = ctx.api_version >= 13
    data: list[tuple[FetchKey, PartitionRequest]] = []
    for topic in request.topics:
        ref: str | uuid.UUID = topic.topic_id if by_id else topic.topic
        for p in topic.partitions:
            if len(data) % STEP == STEP - 1:  # parsing only: let others in
                await asyncio.sleep(0)
            want = PartitionRequest(p.fetch_offset, p.partition_max_bytes, getattr(p, "log_start_offset", -1),
                                    getattr(p, "current_leader_epoch", -1))
            data.append(((ref, p.partition), want))
    return data


def _forgotten(ctx: RequestContext, request: Any) -> list[FetchKey]:
    keys: list[FetchKey] = []
    for topic in getattr(request, "forgotten_topics_data", None) or []:
        ref: str | uuid.UUID = topic.topic_id if ctx.api_version >= 13 else topic.topic
        keys.extend((ref, p) for p in topic.partitions)
    return keys


async def _context(ctx: RequestContext, request: Any) -> FetchContext:
    data = await _fetch_data(ctx, request)
    cache = dataplane(ctx.world).sessions_of(ctx.broker.node_id, ctx.world.config.seed)
    return cache.new_context(
        ctx.api_version, int(getattr(request, "session_id", 0)), int(getattr(request, "session_epoch", -1)),
        data, _forgotten(ctx, request), ctx.world.now_ms(),
    )


# -- the handler ---------------------------------------------------------------------


async def _serve(ctx: RequestContext, request: Any) -> Any:
    context = await _context(ctx, request)
    if context.error != ErrorCode.NONE:
        return await _response(ctx, context.error, 0, [], {})
    plan = context.partitions()
    reads = await _read_all(ctx, request, plan)
    if not _respond_now(request, plan, reads):
        await _long_poll(ctx, request, plan)
        reads = await _read_all(ctx, request, plan)
    outcomes = {}
    for done, (key, read) in enumerate(reads.items(), 1):
        if done % STEP == 0:  # computed from the reads made: let others in; the session is updated in one step
            await asyncio.sleep(0)
        outcomes[key] = read.outcome()
    session_id, keys = await _stepped(context.respond_steps(outcomes, ctx.world.now_ms()))
    response = await _response(ctx, ErrorCode.NONE, session_id, keys, reads, request)
    await _free(reads, outcomes, keys, plan, context.fetch_data)
    return response


async def _stepped(steps: Generator[None, None, T]) -> T:
    """Run a sans-I/O generator, letting other connections in between two of its steps."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            value: T = done.value
            return value
        await asyncio.sleep(0)


async def _free(*entries: dict[Any, Any] | list[Any]) -> None:
    """Drop a big request's working entries a slice at a time: freeing 200,000 reads, outcomes and partition
    requests at once, as the coroutine ends, is one long C call that holds the loop (and the GIL)."""
    for collection in entries:
        while len(collection) > _FREE_SLICE:
            if isinstance(collection, dict):
                for _ in range(_FREE_SLICE):
                    collection.popitem()
            else:
                del collection[-_FREE_SLICE:]
            await asyncio.sleep(0)


def handle(ctx: RequestContext, request: Any) -> Any:
    return _serve(ctx, request)


def _partition(ctx: RequestContext, index: int, read: _Read, committed: bool) -> Any:
    leader = None
    if read.leader is not None and read.error in _LEADER_HINT_ERRORS and ctx.api_version >= 16:
        leader = current_leader(_LEADER, read.leader)
    # Partitions KafkaApis rejects up front carry the schema default (an empty list); a
    # log read carries null for read_uncommitted or any read error, else its (empty) list.
    aborted: list[Any] | None = [] if read.unknown or (committed and read.error == ErrorCode.NONE) else None
    if aborted is not None and read.aborted:
        aborted = [_ABORTED(producer_id=a.producer_id, first_offset=a.first_offset) for a in read.aborted]
    return _PARTITION(
        partition_index=index, error_code=read.error, high_watermark=read.high_watermark,
        last_stable_offset=read.last_stable_offset, log_start_offset=read.log_start_offset,
        aborted_transactions=aborted, preferred_read_replica=-1, records=read.records, current_leader=leader,
    )


async def _response(ctx: RequestContext, error: ErrorCode, session_id: int, keys: list[FetchKey],
              reads: dict[FetchKey, _Read], request: Any = None) -> Any:
    """Consecutive partitions of one topic share a topic entry (``FetchResponse.toMessage``)."""
    committed = request is not None and getattr(request, "isolation_level", 0) == _READ_COMMITTED
    topics: list[Any] = []
    last_ref: object = None
    leaders: set[int] = set()
    for done, (ref, index) in enumerate(keys, 1):
        if done % STEP == 0:  # the answer is built from the reads made: nothing left to change, let others in
            await asyncio.sleep(0)
        read = reads.get((ref, index), _Read(ErrorCode.UNKNOWN_SERVER_ERROR))
        if not topics or ref != last_ref:
            by_id = isinstance(ref, uuid.UUID)
            topics.append(_TOPIC(topic=None if by_id else ref, topic_id=ref if by_id else None, partitions=[]))
            last_ref = ref
        topics[-1].partitions.append(_partition(ctx, index, read, committed))
        if read.leader is not None and read.error in _LEADER_HINT_ERRORS and read.leader.leader_id >= 0:
            leaders.add(read.leader.leader_id)
    endpoints = node_endpoints(_ENDPOINT, ctx.world, leaders, ctx.listener) if ctx.api_version >= 16 else []
    return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0, error_code=error,
                              session_id=session_id, responses=topics, node_endpoints=endpoints)
