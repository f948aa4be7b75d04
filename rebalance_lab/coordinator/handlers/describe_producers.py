"""DescribeProducers (61), v0: the active producers of partitions (``ReplicaManager.activeProducerState``).

READ on each topic (else TOPIC_AUTHORIZATION_FAILED), an unknown partition UNKNOWN_TOPIC_OR_PARTITION,
a broker that does not lead it NOT_LEADER_OR_FOLLOWER; each producer with its epoch, last sequence and
timestamp, coordinator epoch and the first offset of its open transaction (-1 without).
"""

from __future__ import annotations

from typing import Any

from rebalance_lab.coordinator.dataplane import leadership_error, partition_log
from rebalance_lab.coordinator.handlers import authz
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode

API_KEY = 61
_TOPIC = codec.response_type(API_KEY).TopicResponse
_PARTITION = _TOPIC.PartitionResponse
_PRODUCER = _PARTITION.ProducerState


def _partition(ctx: RequestContext, topic: str, index: int) -> Any:
    info = ctx.world.cluster.topics.get(topic)
    if not authz.permits(ctx, authz.READ, authz.TOPIC, topic):
        return _PARTITION(partition_index=index, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, active_producers=[])
    if info is None or not 0 <= index < len(info.partitions):
        return _PARTITION(partition_index=index, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, active_producers=[])
    partition = info.partitions[index]
    error = leadership_error(ctx.broker.node_id, partition)
    if error is not ErrorCode.NONE:
        return _PARTITION(partition_index=index, error_code=error, active_producers=[])
    state = partition_log(ctx.world, info, partition).producer_state
    producers = [
        _PRODUCER(producer_id=pid, producer_epoch=e.epoch, last_sequence=e.last_sequence,
                  last_timestamp=e.last_timestamp, coordinator_epoch=e.coordinator_epoch,
                  current_txn_start_offset=-1 if e.open_txn_first_offset is None else e.open_txn_first_offset)
        for pid, e in state.producers.items()
    ]
    return _PARTITION(partition_index=index, error_code=ErrorCode.NONE, active_producers=producers)


def handle(ctx: RequestContext, request: Any) -> Any:
    topics = [_TOPIC(name=t.name, partitions=[_partition(ctx, t.name, i) for i in t.partition_indexes])
              for t in request.topics]
    return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0, topics=topics)
