"""ListOffsets (2), v1-11: offsets by timestamp, earliest (-2), latest (-1), max timestamp (-3).

Follows ``KafkaApis.handleListOffsetRequest`` and ``UnifiedLog.fetchOffsetByTimestamp``:

* latest is the high watermark, or the last stable offset for read_committed (v2+);
  earliest (and earliest-local, -4, KIP-405: no tiered storage here) is the log
  start offset; -5 (earliest pending upload, KIP-1005) finds nothing without tiered
  storage; a timestamp finds the first record at or after it; -3 the record with
  the largest timestamp (KIP-734). Nothing found -> offset -1, timestamp -1, no error;
* special timestamps answer timestamp -1; the leader epoch (v4+) is the epoch of
  the batch found, or the current epoch for latest;
* a partition named twice -> INVALID_REQUEST: Kafka 4.4 answers it once, grouped
  by topic; Kafka 3.9 answers every request entry in the request's shape (both
  checked against real brokers); unknown ->
  UNKNOWN_TOPIC_OR_PARTITION; leadership and the client's leader epoch are checked
  as for Fetch, except for the debugging replica id -2, which may ask a follower.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Generator
from typing import Any

from rebalance_lab.config import Flavor
from rebalance_lab.coordinator.dataplane import leadership_error, partition_log
from rebalance_lab.coordinator.handlers import authz
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.coordinator.handlers.steps import Pacer, answer, counted
from rebalance_lab.coordinator.logs import TimestampAndOffset
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode

API_KEY = 2
_RESPONSE = codec.response_type(API_KEY)
_TOPIC = _RESPONSE.ListOffsetsTopicResponse
_PARTITION = _TOPIC.ListOffsetsPartitionResponse
_READ_COMMITTED = 1
_DEBUGGING_REPLICA_ID = -2
_EARLIEST_PENDING_UPLOAD = -5


def _lookup(ctx: RequestContext, request: Any, name: str, p: Any) -> tuple[ErrorCode, TimestampAndOffset | None]:
    info = ctx.world.cluster.topics.get(name)
    if info is None or not 0 <= p.partition_index < len(info.partitions):
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
    partition = info.partitions[p.partition_index]
    epoch = getattr(p, "current_leader_epoch", -1)
    error = leadership_error(ctx.broker.node_id, partition, epoch)
    if error == ErrorCode.NOT_LEADER_FOR_PARTITION and request.replica_id == _DEBUGGING_REPLICA_ID \
            and ctx.broker.node_id in partition.replicas:
        error = ErrorCode.NONE
    if error != ErrorCode.NONE:
        return error, None
    log = partition_log(ctx.world, info, partition)
    committed = getattr(request, "isolation_level", 0) == _READ_COMMITTED
    if p.timestamp == _EARLIEST_PENDING_UPLOAD:
        return ErrorCode.NONE, None
    found = log.offset_for_timestamp(p.timestamp, log.last_stable_offset if committed else log.high_watermark)
    return ErrorCode.NONE, found


def _partition(ctx: RequestContext, request: Any, name: str, p: Any, duplicate: bool) -> Any:
    if not authz.permits(ctx, authz.DESCRIBE, authz.TOPIC, name):
        error, found = ErrorCode.TOPIC_AUTHORIZATION_FAILED, None  # KafkaApis: DESCRIBE, before ReplicaManager
    elif duplicate:
        error, found = ErrorCode.INVALID_REQUEST, None
    else:
        error, found = _lookup(ctx, request, name, p)
    if found is None:
        return _PARTITION(partition_index=p.partition_index, error_code=error, timestamp=-1, offset=-1,
                          leader_epoch=-1)
    return _PARTITION(partition_index=p.partition_index, error_code=error, timestamp=found.timestamp,
                      offset=found.offset, leader_epoch=found.leader_epoch)


def handle(ctx: RequestContext, request: Any) -> Any:
    size = sum(len(t.partitions) for t in request.topics)
    return answer(_answer(ctx, request), size)


def _answer(ctx: RequestContext, request: Any) -> Generator[None, None, Any]:
    counts = yield from counted((t.name, p.partition_index) for t in request.topics for p in t.partitions)
    if ctx.world.config.flavor == Flavor.KAFKA_3:
        # 3.9 answers every requested entry, duplicates included, in the request's shape.
        pacer, topics = Pacer(), []
        for t in request.topics:
            parts = []
            for p in t.partitions:
                yield from pacer.pause()
                parts.append(_partition(ctx, request, t.name, p, counts[(t.name, p.partition_index)] > 1))
            topics.append(_TOPIC(name=t.name, partitions=parts))
        return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0, topics=topics)
    return (yield from _grouped(ctx, request, counts))


def _grouped(ctx: RequestContext, request: Any, counts: Counter[tuple[str, int]]) -> Generator[None, None, Any]:
    """4.x: one answer per distinct partition, grouped by topic (``ReplicaManager.fetchOffset``
    keys its answers by partition; Kafka's group order is a Scala HashMap's, ours first use)."""
    grouped: dict[str, dict[int, Any]] = {}
    pacer = Pacer()
    for t in request.topics:
        for p in t.partitions:
            yield from pacer.pause()  # each partition is answered from one state
            answers = grouped.setdefault(t.name, {})
            key = (t.name, p.partition_index)
            if p.partition_index not in answers:
                answers[p.partition_index] = _partition(ctx, request, t.name, p, counts[key] > 1)
    topics = [_TOPIC(name=name, partitions=list(answers.values())) for name, answers in grouped.items()]
    return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0, topics=topics)


def error_response(api_version: int, request: Any, code: ErrorCode) -> Any:
    topics = [
        _TOPIC(name=t.name, partitions=[
            _PARTITION(partition_index=p.partition_index, error_code=code, timestamp=-1, offset=-1, leader_epoch=-1)
            for p in t.partitions
        ])
        for t in request.topics
    ]
    return codec.new_response(API_KEY, api_version, throttle_time_ms=0, topics=topics)
