"""ListGroups (16), v0-5 (spec §11.2): the groups this broker coordinates, classic then KIP-848
consumer groups (spec/kip848.md §8.3; Kafka's order is a hash order across both, unspecified)."""

from __future__ import annotations

import itertools
from collections.abc import Generator, Iterable
from typing import Any

from rebalance_lab.coordinator import consumer_surface
from rebalance_lab.coordinator.classic.admin_messages import ListGroupsInput, ListGroupsResult
from rebalance_lab.coordinator.group_service import owns_group, service_of
from rebalance_lab.coordinator.handlers import authz
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.coordinator.handlers.steps import Pacer, answer
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode

API_KEY = 16


def handle(ctx: RequestContext, request: Any) -> Any:
    version = ctx.api_version
    states = tuple(request.states_filter or ()) if version >= 4 else ()
    types = tuple(request.types_filter or ()) if version >= 5 else ()
    service = service_of(ctx.world)
    inp = ListGroupsInput(states, types)
    # each coordinator's groups as they are reached in steps (a snapshot of its table, each group's state read
    # when reached): listing 200,000 groups of either kind at once held the loop (issue 17)
    consumer_count, consumers = consumer_surface.listing(ctx.world, states, types)
    listing = service.coordinator.listing(inp)
    if listing is None:  # loading: the classic coordinator's one answer (an error, no groups)
        parked = service.call(service.coordinator.list_groups, inp, lambda r: r)
        if not parked.done:  # the classic coordinator answers a listing at once (even while loading)
            raise RuntimeError("ListGroups was not answered at once")
        result: ListGroupsResult = parked.value
        return answer(_listed(ctx, result.error, itertools.chain(result.groups, consumers)), consumer_count)
    count, classic = listing
    return answer(_listed(ctx, ErrorCode.NONE, itertools.chain(classic, consumers)), count + consumer_count)


def _listed(ctx: RequestContext, error: ErrorCode, groups: Iterable[Any]) -> Generator[None, None, Any]:
    """The groups this broker coordinates and the caller may see, in steps: building each classic group's entry
    (0.9 s for 200,000 groups at once) and finding its coordinator by hashing its id (200,000 groups held the
    loop ~14 s). Kafka lists each offsets partition on its own too (``GroupCoordinatorService.listGroups``), so a
    listing is never one atomic read there either."""
    listed = codec.data_class(codec.response_type(API_KEY), "ListedGroup")
    # KafkaApis: DESCRIBE on the cluster lists every group, otherwise only those the caller may DESCRIBE
    everything = authz.permits_cluster(ctx, authz.DESCRIBE)
    entries, pacer = [], Pacer()
    for g in groups:
        yield from pacer.pause()
        if owns_group(ctx.world, ctx.broker.node_id, g.group_id) and (
                everything or authz.permits(ctx, authz.DESCRIBE, authz.GROUP, g.group_id)):
            entries.append(listed(group_id=g.group_id, protocol_type=g.protocol_type, group_state=g.state,
                                  group_type=g.group_type))
    return codec.new_response(API_KEY, ctx.api_version, throttle_time_ms=0, error_code=int(error),
                              groups=entries)
