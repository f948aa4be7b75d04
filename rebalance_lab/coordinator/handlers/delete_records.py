"""DeleteRecords (21), v0-2: raise partitions' log start offset, as ``KafkaApis.handleDeleteRecordsRequest``
and ``Partition.deleteRecordsOnLeader`` do on Kafka 4.4.0.

Per partition: DELETE on the topic (TOPIC_AUTHORIZATION_FAILED) then existence
(UNKNOWN_TOPIC_OR_PARTITION), leadership (NOT_LEADER_OR_FOLLOWER), a topic whose cleanup.policy lacks
"delete" -> POLICY_VIOLATION, offset -1 means the high watermark, below 0 or above the high watermark
-> OFFSET_OUT_OF_RANGE. Failed partitions have low watermark -1; a done one the new log start offset
(never lower than before). Fetch below it is OFFSET_OUT_OF_RANGE and ListOffsets' earliest is it
(``logs.PartitionLog``). Replication is instant here, so the answer never waits for followers.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from rebalance_lab.coordinator import topic_configs
from rebalance_lab.coordinator.dataplane import leadership_error, partition_log
from rebalance_lab.coordinator.handlers import authz
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.coordinator.handlers.steps import Pacer, answer
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode, KafkaError

API_KEY = 21
_RESPONSE = codec.response_type(API_KEY)
_TOPIC = _RESPONSE.DeleteRecordsTopicResult
_PARTITION = _TOPIC.DeleteRecordsPartitionResult


def _delete(ctx: RequestContext, name: str, index: int, offset: int) -> tuple[ErrorCode, int]:
    if not authz.permits(ctx, authz.DELETE, authz.TOPIC, name):
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1
    info = ctx.world.cluster.topics.get(name)
    if info is None or not 0 <= index < len(info.partitions):
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1
    partition = info.partitions[index]
    error = leadership_error(ctx.broker.node_id, partition)
    if error != ErrorCode.NONE:
        return error, -1
    policy = info.configs.get("cleanup.policy", topic_configs.DEFAULTS[ctx.world.config.flavor]["cleanup.policy"])
    if "delete" not in [p.strip() for p in policy.split(",")]:
        return ErrorCode.POLICY_VIOLATION, -1
    try:
        return ErrorCode.NONE, partition_log(ctx.world, info, partition).delete_records_before(offset)
    except KafkaError as exc:
        return exc.code, -1


def handle(ctx: RequestContext, request: Any) -> Any:
    return answer(_answer(ctx, request), sum(len(t.partitions) for t in request.topics))


def _answer(ctx: RequestContext, request: Any) -> Generator[None, None, Any]:
    # Each partition is its own deleteRecordsOnLeader in Kafka (no atomicity across partitions), so the
    # loop may serve others between partitions: 200,000 partitions in one go held it ~1.4 s.
    topics, pacer = [], Pacer()
    for topic in request.topics:
        partitions = []
        for p in topic.partitions:
            yield from pacer.pause()
            error, low = _delete(ctx, topic.name, p.partition_index, p.offset)
            partitions.append(_PARTITION(partition_index=p.partition_index, low_watermark=low, error_code=error))
        topics.append(_TOPIC(name=topic.name, partitions=partitions))
    return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0, topics=topics)


def error_response(api_version: int, request: Any, code: ErrorCode) -> Any:
    topics = [_TOPIC(name=t.name, partitions=[_PARTITION(partition_index=p.partition_index, low_watermark=-1,
                                                        error_code=code) for p in t.partitions])
              for t in request.topics]
    return codec.new_response(API_KEY, api_version, throttle_time_ms=0, topics=topics)
