"""ConsumerGroupDescribe (69), v0-1, KIP-848 (spec/kip848.md §1.4): wire <-> the consumer group core.

Groups another broker coordinates get NOT_COORDINATOR entries; v1 adds each member's
``MemberType`` (KIP-1099). A default 3.9 broker (flavor kafka-3) advertises v0 and answers
every group UNSUPPORTED_VERSION (its consumer protocol is off).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from rebalance_lab.config import Flavor
from rebalance_lab.coordinator.consumer.messages import DescribedGroup, DescribedTopic, DescribeInput, DescribeResult
from rebalance_lab.coordinator.group_service import owns_group, service_of
from rebalance_lab.coordinator.handlers import authz
from rebalance_lab.coordinator.handlers.base import Parked, RequestContext
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode

API_KEY = 69
_ALL_GROUP_OPERATIONS = 3400  # READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS: no authorizer


def _assignment(shape: Any, topics: tuple[DescribedTopic, ...]) -> Any:
    topic = codec.data_class(shape, "TopicPartitions")
    return shape(topic_partitions=[topic(topic_id=t.topic_id, topic_name=t.name, partitions=list(t.partitions))
                                   for t in topics])


def _group(version: int, g: DescribedGroup, include_ops: bool, ops_of: Callable[[str], int] | None = None) -> Any:
    described = codec.data_class(codec.response_type(API_KEY), "DescribedGroup")
    member = codec.data_class(described, "Member")
    shape = codec.data_class(member, "Assignment")
    members = [member(
        member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id, member_epoch=m.member_epoch,
        client_id=m.client_id, client_host=m.client_host, subscribed_topic_names=list(m.subscribed_topic_names),
        subscribed_topic_regex=m.subscribed_topic_regex, assignment=_assignment(shape, m.assignment),
        target_assignment=_assignment(shape, m.target_assignment), member_type=m.member_type,
    ) for m in g.members]
    ops = (ops_of or (lambda _: _ALL_GROUP_OPERATIONS))(g.group_id) if include_ops and g.error is ErrorCode.NONE \
        else -(1 << 31)
    return described(error_code=int(g.error), error_message=g.error_message, group_id=g.group_id,
                     group_state=g.state, group_epoch=g.group_epoch, assignment_epoch=g.assignment_epoch,
                     assignor_name=g.assignor_name, members=members, authorized_operations=ops)


def handle(ctx: RequestContext, request: Any) -> Any | Parked:
    version = ctx.api_version
    requested = [g or "" for g in request.group_ids or ()]
    # GroupCoordinatorService.consumerGroupDescribe: an empty id is INVALID_GROUP_ID, answered ahead of the rest
    empty = [DescribedGroup("", ErrorCode.INVALID_GROUP_ID) for g in requested if not g]
    group_ids = [g for g in requested if g]
    # KafkaApis: DESCRIBE on each group, the others answered GROUP_AUTHORIZATION_FAILED
    refused = {g: DescribedGroup(g, ErrorCode.GROUP_AUTHORIZATION_FAILED)
               for g in authz.denied(ctx, authz.DESCRIBE, authz.GROUP, group_ids)}
    ours = tuple(g for g in group_ids if g not in refused and owns_group(ctx.world, ctx.broker.node_id, g))
    include_ops = bool(request.include_authorized_operations)
    if ctx.world.config.flavor is not Flavor.KAFKA_4:
        off = [DescribedGroup(g, ErrorCode.UNSUPPORTED_VERSION) for g in requested]  # KafkaApis, in request order
        return codec.new_response(API_KEY, version, throttle_time_ms=0,
                                  groups=[_group(version, g, include_ops) for g in off])
    service = service_of(ctx.world)

    def build(result: DescribeResult) -> Any:
        found = {**{g.group_id: g for g in result.groups}, **refused}
        groups = empty + [found.get(g) or DescribedGroup(g, ErrorCode.NOT_COORDINATOR) for g in group_ids]
        ops_of = partial(authz.authorized_operations, ctx, authz.GROUP)
        return codec.new_response(API_KEY, version, throttle_time_ms=0,
                                  groups=[_group(version, g, include_ops, ops_of) for g in groups])

    def describe(now_ms: int, inp: DescribeInput, token: int) -> Any:
        return service.consumer.describe(inp, service.topics(), token)

    return service.call(describe, DescribeInput(ours, include_ops, version), build)
