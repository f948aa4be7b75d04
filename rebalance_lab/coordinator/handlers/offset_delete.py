"""OffsetDelete (47) (spec/coordinator.md §12.3).

A KIP-848 consumer group has no state check (``ConsumerGroup.validateOffsetDelete`` does
nothing): only the topics its members subscribe to are refused, GROUP_SUBSCRIBED_TO_TOPIC per
partition (spec/kip848.md §8.3).
"""

from __future__ import annotations

from typing import Any

from rebalance_lab.coordinator import consumer_surface
from rebalance_lab.coordinator.classic.offsets_gate import OffsetDeleteCheck
from rebalance_lab.coordinator.group_service import owns_group, service_of
from rebalance_lab.coordinator.handlers import authz
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.coordinator.offsets_service import offsets_of
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode

API_KEY = 47


def _topics(ctx: RequestContext, request: Any, subscribed: Any) -> list[Any]:
    topic_cls = codec.response_type(API_KEY).OffsetDeleteResponseTopic
    part_cls = topic_cls.OffsetDeleteResponsePartition
    store = offsets_of(ctx.world).store
    topics = []
    refused = authz.denied(ctx, authz.READ, authz.TOPIC, (t.name for t in request.topics))
    for topic in request.topics:
        info = ctx.world.cluster.topics.get(topic.name)
        parts = []
        for p in topic.partitions:
            if topic.name in refused:
                error = ErrorCode.TOPIC_AUTHORIZATION_FAILED  # KafkaApis: READ on each topic, before metadata
            elif info is None or not 0 <= p.partition_index < len(info.partitions):
                error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION  # KafkaApis' metadata-cache pre-check
            elif subscribed(topic.name):
                error = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
            else:
                store.delete(request.group_id, topic.name, p.partition_index)
                error = ErrorCode.NONE
            parts.append(part_cls(partition_index=p.partition_index, error_code=int(error)))
        topics.append(topic_cls(name=topic.name, partitions=parts))
    return topics


def handle(ctx: RequestContext, request: Any) -> Any:
    if not authz.permits(ctx, authz.DELETE, authz.GROUP, request.group_id):
        return codec.new_response(API_KEY, ctx.api_version, error_code=int(ErrorCode.GROUP_AUTHORIZATION_FAILED),
                                  throttle_time_ms=0, topics=[])
    if not owns_group(ctx.world, ctx.broker.node_id, request.group_id):
        return codec.new_response(API_KEY, ctx.api_version, error_code=int(ErrorCode.NOT_COORDINATOR),
                                  throttle_time_ms=0, topics=[])
    check = _check(ctx, request)
    if check.error is not ErrorCode.NONE:
        return codec.new_response(API_KEY, ctx.api_version, error_code=int(check.error), throttle_time_ms=0,
                                  topics=[])
    return codec.new_response(API_KEY, ctx.api_version, error_code=0, throttle_time_ms=0,
                              topics=_topics(ctx, request, check.is_subscribed))


def _check(ctx: RequestContext, request: Any) -> OffsetDeleteCheck:
    if consumer_surface.holds(ctx.world, request.group_id):
        topics = consumer_surface.subscribed_topics(ctx.world, request.group_id, (t.name for t in request.topics))
        return OffsetDeleteCheck(ErrorCode.NONE, topics)
    return service_of(ctx.world).validate_offset_delete(request.group_id)
