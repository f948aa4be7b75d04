"""OffsetForLeaderEpoch (23), v2-4: the end offset of a leader epoch, as ``ReplicaManager.lastOffsetForLeaderEpoch``
and ``LeaderEpochFileCache.endOffsetFor`` answer on Kafka 4.4.0 (consumers use it to detect truncation).

Per partition: DESCRIBE on the topic (TOPIC_AUTHORIZATION_FAILED), existence (UNKNOWN_TOPIC_OR_PARTITION),
the current leader epoch and leadership as Fetch checks them (FENCED/UNKNOWN_LEADER_EPOCH,
NOT_LEADER_OR_FOLLOWER). Then, with the epochs the log's batches carry and the current one starting at
the log end: epoch -1 -> (-1, -1); the current epoch -> (it, log end offset); an older epoch -> (the
largest epoch at or below it, the start offset of the next larger epoch), or (it, that offset) when none
is at or below it; an epoch newer than every epoch -> (-1, -1). Errors carry (-1, -1).
"""

from __future__ import annotations

from typing import Any

from rebalance_lab.coordinator.dataplane import leadership_error, partition_log
from rebalance_lab.coordinator.handlers import authz
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.coordinator.logs import PartitionLog
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode

API_KEY = 23
VERSIONS = (2, 4)
_RESPONSE = codec.response_type(API_KEY)
_TOPIC = _RESPONSE.OffsetForLeaderTopicResult
_PARTITION = _TOPIC.EpochEndOffset


def _epochs(log: PartitionLog) -> list[tuple[int, int]]:
    """(epoch, start offset) in offset order, as the leader epoch cache holds them."""
    entries: list[tuple[int, int]] = []
    for batch in log.batches:
        if batch.leader_epoch >= 0 and (not entries or batch.leader_epoch > entries[-1][0]):
            entries.append((batch.leader_epoch, batch.base_offset))
    if not entries or log.leader_epoch > entries[-1][0]:
        entries.append((log.leader_epoch, log.log_end_offset))
    return entries


def end_offset_for(log: PartitionLog, requested: int) -> tuple[int, int]:
    entries = _epochs(log)
    if requested < 0:
        return -1, -1
    if requested == entries[-1][0]:
        return requested, log.log_end_offset
    higher = next((e for e in entries if e[0] > requested), None)
    if higher is None:
        return -1, -1
    floor = [e for e in entries if e[0] <= requested]
    return (floor[-1][0] if floor else requested), higher[1]


def _answer(ctx: RequestContext, topic: str, p: Any) -> tuple[ErrorCode, int, int]:
    if not authz.permits(ctx, authz.DESCRIBE, authz.TOPIC, topic):
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1, -1
    info = ctx.world.cluster.topics.get(topic)
    if info is None or not 0 <= p.partition < len(info.partitions):
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1
    partition = info.partitions[p.partition]
    error = leadership_error(ctx.broker.node_id, partition, p.current_leader_epoch)
    if error != ErrorCode.NONE:
        return error, -1, -1
    epoch, offset = end_offset_for(partition_log(ctx.world, info, partition), p.leader_epoch)
    return ErrorCode.NONE, epoch, offset


def handle(ctx: RequestContext, request: Any) -> Any:
    topics = []
    for t in request.topics:
        answers = [(p.partition, *_answer(ctx, t.topic, p)) for p in t.partitions]
        topics.append(_TOPIC(topic=t.topic, partitions=[
            _PARTITION(error_code=c, partition=i, leader_epoch=e, end_offset=o) for i, c, e, o in answers]))
    return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0, topics=topics)


def error_response(api_version: int, request: Any, code: ErrorCode) -> Any:
    topics = [_TOPIC(topic=t.topic, partitions=[_PARTITION(error_code=code, partition=p.partition, leader_epoch=-1,
                                                           end_offset=-1) for p in t.partitions])
              for t in request.topics]
    return codec.new_response(API_KEY, api_version, throttle_time_ms=0, topics=topics)
