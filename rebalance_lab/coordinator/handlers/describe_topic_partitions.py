"""DescribeTopicPartitions (75), v0: topics' partitions page by page, as Kafka 4.4.0's
``DescribeTopicPartitionsRequestHandler`` and ``KRaftMetadataCache.getTopicMetadataForDescribeTopicResponse``
answer (KIP-966).

* the topics named (empty: every topic) at or after the cursor's topic, in name order; a cursor topic
  missing from the list, or a negative cursor partition -> INVALID_REQUEST for the whole request;
* at most min(``response_partition_limit``, max.request.partition.size.limit=2000), at least 1,
  partitions in all; where they run out ``next_cursor`` names the first partition not returned (a topic
  that could return none is left for the next page);
* a named topic that does not exist -> UNKNOWN_TOPIC_OR_PARTITION (an illegal name ->
  INVALID_TOPIC_EXCEPTION) with a zero topic id; an all-topics request leaves nothing out but what
  the caller may not DESCRIBE; named topics it may not DESCRIBE come last with TOPIC_AUTHORIZATION_FAILED;
* partitions as in Metadata: leader -1 when not live, every replica, offline replicas; no eligible
  leader replicas (ELR is off: the emulator has no min ISR to protect).
"""

from __future__ import annotations

import uuid
from collections.abc import Generator
from typing import Any

from rebalance_lab.coordinator.cluster import PartitionInfo, TopicInfo, is_internal_topic, is_valid_topic_name
from rebalance_lab.coordinator.handlers import authz
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.coordinator.handlers.steps import Pacer, answer, distinct_sorted
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode, KafkaError

API_KEY = 75
_RESPONSE = codec.response_type(API_KEY)
_TOPIC = _RESPONSE.DescribeTopicPartitionsResponseTopic
_PARTITION = _TOPIC.DescribeTopicPartitionsResponsePartition
_CURSOR = _RESPONSE.Cursor
MAX_PARTITIONS = 2000  # max.request.partition.size.limit
_ZERO = uuid.UUID(int=0)
_NO_OPERATIONS = -(2**31)


def _wanted(ctx: RequestContext, request: Any) -> Generator[None, None, tuple[list[str], bool]]:
    cursor = request.cursor
    start = cursor.topic_name if cursor is not None else ""
    everything = not request.topics
    names = list(ctx.world.cluster.topics) if everything else [t.name for t in request.topics]
    chosen = yield from distinct_sorted(n for n in names if n >= start)
    if not everything and cursor is not None and cursor.topic_name not in chosen:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "DescribeTopicPartitionsRequest topic list should contain the "
                         f"cursor topic: {cursor.topic_name}")
    if cursor is not None and cursor.partition_index < 0:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "DescribeTopicPartitionsRequest cursor partition must be valid")
    return chosen, everything


def _partition(p: PartitionInfo, live: set[int]) -> Any:
    return _PARTITION(error_code=ErrorCode.NONE, partition_index=p.partition,
                      leader_id=p.leader_id if p.leader_id in live else -1, leader_epoch=p.leader_epoch,
                      replica_nodes=list(p.replicas), isr_nodes=list(p.isr), eligible_leader_replicas=[],
                      last_known_elr=[], offline_replicas=[r for r in p.replicas if r not in live])


def _topic(info: TopicInfo, partitions: list[Any]) -> Any:
    return _TOPIC(error_code=ErrorCode.NONE, name=info.name, topic_id=info.topic_id, is_internal=info.internal,
                  partitions=partitions, topic_authorized_operations=_NO_OPERATIONS)


def _missing(name: str, error: ErrorCode) -> Any:
    return _TOPIC(error_code=error, name=name, topic_id=_ZERO, is_internal=is_internal_topic(name), partitions=[],
                  topic_authorized_operations=_NO_OPERATIONS)


def handle(ctx: RequestContext, request: Any) -> Any:
    return answer(_answer(ctx, request), len(request.topics) or len(ctx.world.cluster.topics))


def _answer(ctx: RequestContext, request: Any) -> Generator[None, None, Any]:
    names, everything = yield from _wanted(ctx, request)
    denied = authz.denied(ctx, authz.DESCRIBE, authz.TOPIC, names)
    cursor = request.cursor
    live = {i for i, node in ctx.world.nodes.items() if node.up and i not in ctx.world.cluster.fenced}
    remaining = max(min(MAX_PARTITIONS, request.response_partition_limit), 1)
    topics: list[Any] = []
    next_cursor = None
    pacer = Pacer()
    for name in (n for n in names if n not in denied):
        yield from pacer.pause()  # each topic is described from one state
        if remaining <= 0:
            next_cursor = _CURSOR(topic_name=name, partition_index=0)
            break
        info = ctx.world.cluster.topics.get(name)
        if info is None:
            if not everything:
                topics.append(_missing(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if is_valid_topic_name(name)
                                       else ErrorCode.INVALID_TOPIC))
            continue
        first = cursor.partition_index if cursor is not None and name == cursor.topic_name else 0
        upper = min(len(info.partitions), first + remaining)
        topics.append(_topic(info, [_partition(p, live) for p in info.partitions[first:upper]]))
        if upper < len(info.partitions):
            next_cursor = _CURSOR(topic_name=name, partition_index=upper)
            break
        remaining -= max(0, upper - first)
    for topic in topics:  # the handler sets every returned topic's operations, errors included
        yield from pacer.pause()
        topic.topic_authorized_operations = authz.authorized_operations(ctx, authz.TOPIC, topic.name)
    if not everything:
        topics.extend(_missing(n, ErrorCode.TOPIC_AUTHORIZATION_FAILED) for n in sorted(denied))
    return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0, topics=topics, next_cursor=next_cursor)


def error_response(api_version: int, request: Any, code: ErrorCode) -> Any:
    topics = [_missing(t.name, code) for t in request.topics]
    return codec.new_response(API_KEY, api_version, throttle_time_ms=0, topics=topics, next_cursor=None)
