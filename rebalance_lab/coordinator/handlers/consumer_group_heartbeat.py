"""ConsumerGroupHeartbeat (68), v0-1, KIP-848 (spec/kip848.md §1.2-1.3, §2): wire <-> the consumer group core.

A default 3.9 broker (flavor kafka-3) advertises v0 but answers UNSUPPORTED_VERSION: its
consumer protocol is off (``KafkaApis.isConsumerGroupProtocolEnabled``). Kafka validates the
request before routing it to the group's shard (``GroupCoordinatorService``), so an invalid
request gets its INVALID_REQUEST even on a broker that does not coordinate the group.
"""

from __future__ import annotations

import uuid
from functools import partial
from typing import Any

from rebalance_lab.config import Flavor
from rebalance_lab.coordinator.consumer.messages import ConsumerGroupHeartbeatInput, HeartbeatResult
from rebalance_lab.coordinator.group_service import service_of
from rebalance_lab.coordinator.handlers import authz
from rebalance_lab.coordinator.handlers.base import Parked, RequestContext
from rebalance_lab.coordinator.routing import check_coordinator
from rebalance_lab.protocol.errors import ErrorCode
from rebalance_lab.protocol.heartbeat_codec import Assignment, HeartbeatResponse, TopicPartitions

API_KEY = 68


def to_input(ctx: RequestContext, request: Any) -> ConsumerGroupHeartbeatInput:
    owned = request.topic_partitions
    return ConsumerGroupHeartbeatInput(
        group_id=request.group_id or "",
        member_id=request.member_id or "",
        member_epoch=int(request.member_epoch),
        api_version=ctx.api_version,
        instance_id=request.instance_id,
        rack_id=request.rack_id,
        rebalance_timeout_ms=int(request.rebalance_timeout_ms),
        subscribed_topic_names=None if request.subscribed_topic_names is None
        else tuple(request.subscribed_topic_names),
        subscribed_topic_regex=request.subscribed_topic_regex if ctx.api_version >= 1 else None,
        server_assignor=request.server_assignor,
        topic_partitions=None if owned is None
        else tuple((_uuid(tp.topic_id), tuple(int(p) for p in tp.partitions or ())) for tp in owned),
        client_id=ctx.client_id or "",
        client_host=ctx.client_host,
        may_describe=None if ctx.world.authorizer is None else partial(authz.permits, ctx, authz.DESCRIBE, authz.TOPIC),
    )


def _uuid(value: Any) -> uuid.UUID:
    if value is None:  # kafka-python's generic decoder reads Kafka's Uuid.ZERO_UUID as None (found by tests/fuzz)
        return uuid.UUID(int=0)
    return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))


def to_response(version: int, result: HeartbeatResult) -> HeartbeatResponse:
    """The fast codec's response object (``codec.encode_response`` writes it; ``codec.generic`` converts it)."""
    assignment = None
    if result.assignment is not None:
        assignment = Assignment([TopicPartitions(t, list(ps)) for t, ps in result.assignment.items()])
    return HeartbeatResponse(version, 0, int(result.error), result.error_message, result.member_id,
                             result.member_epoch, result.heartbeat_interval_ms, assignment)


def error_response(version: int, request: Any, code: ErrorCode) -> Any:
    """``ConsumerGroupHeartbeatRequest.getErrorResponse``: the code only (member id null, epoch 0)."""
    return to_response(version, HeartbeatResult.failed(code, None))


def handle(ctx: RequestContext, request: Any) -> Any | Parked:
    version = ctx.api_version
    if ctx.world.config.flavor is not Flavor.KAFKA_4:
        return error_response(version, request, ErrorCode.UNSUPPORTED_VERSION)
    # KafkaApis: READ on the group, then DESCRIBE on every subscribed topic name, before the coordinator
    authz.require_group(ctx, authz.READ, request.group_id or "")
    if authz.denied(ctx, authz.DESCRIBE, authz.TOPIC, request.subscribed_topic_names or ()):
        return error_response(version, request, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    inp = to_input(ctx, request)
    service = service_of(ctx.world)
    invalid = service.consumer.validate(inp)
    if invalid is not None:
        return to_response(version, invalid)
    check_coordinator(ctx.world, ctx.broker.node_id, inp.group_id)
    return service.call(service.consumer_heartbeat, inp, lambda r: to_response(version, r))
