"""ListGroups (16), v0-5 (spec §11.2): the groups this broker coordinates, classic then KIP-848
consumer groups (spec/kip848.md §8.3; Kafka's order is a hash order across both, unspecified)."""

from __future__ import annotations

from typing import Any

from rebalance_lab.coordinator import consumer_surface
from rebalance_lab.coordinator.classic.messages import ListGroupsInput, ListGroupsResult
from rebalance_lab.coordinator.group_service import owns_group, service_of
from rebalance_lab.coordinator.handlers import authz
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.protocol import codec

API_KEY = 16


def handle(ctx: RequestContext, request: Any) -> Any:
    version = ctx.api_version
    states = tuple(request.states_filter or ()) if version >= 4 else ()
    types = tuple(request.types_filter or ()) if version >= 5 else ()
    listed = codec.data_class(codec.response_type(API_KEY), "ListedGroup")
    # KafkaApis: DESCRIBE on the cluster lists every group, otherwise only those the caller may DESCRIBE
    everything = authz.permits_cluster(ctx, authz.DESCRIBE)

    def visible(group_id: str) -> bool:
        return everything or authz.permits(ctx, authz.DESCRIBE, authz.GROUP, group_id)

    def build(result: ListGroupsResult) -> Any:
        groups = [
            listed(group_id=g.group_id, protocol_type=g.protocol_type, group_state=g.state, group_type=g.group_type)
            for g in (*result.groups, *consumer_surface.listed(ctx.world, states, types))
            if owns_group(ctx.world, ctx.broker.node_id, g.group_id) and visible(g.group_id)
        ]
        return codec.new_response(API_KEY, version, throttle_time_ms=0, error_code=int(result.error), groups=groups)

    service = service_of(ctx.world)
    return service.call(service.coordinator.list_groups, ListGroupsInput(states, types), build)
