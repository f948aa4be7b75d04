"""DeleteGroups (42), v0-2 (spec §11.3). Duplicate ids are removed first (KafkaApis).

A KIP-848 consumer group goes only when Empty (spec/kip848.md §8.3), with its offsets.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from rebalance_lab.coordinator import consumer_surface
from rebalance_lab.coordinator.classic.messages import DeleteGroupsInput, DeleteGroupsResult
from rebalance_lab.coordinator.group_service import owns_group, service_of
from rebalance_lab.coordinator.handlers import authz
from rebalance_lab.coordinator.handlers.base import RequestContext
from rebalance_lab.coordinator.handlers.steps import Pacer, answer, chunks
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode

API_KEY = 42


def handle(ctx: RequestContext, request: Any) -> Any:
    return answer(_answer(ctx, request), len(request.groups_names or ()))


def _answer(ctx: RequestContext, request: Any) -> Generator[None, None, Any]:
    """In steps of 200 groups, each step one coordinator operation: GroupCoordinatorService.deleteGroups
    deletes each group in its own __consumer_offsets partition's write, never the request atomically."""
    version = ctx.api_version
    group_ids = list(dict.fromkeys(g or "" for g in request.groups_names or ()))
    refused = {g: ErrorCode.GROUP_AUTHORIZATION_FAILED for g in authz.denied(ctx, authz.DELETE, authz.GROUP, group_ids)}
    errors: dict[str, ErrorCode] = {}
    service = service_of(ctx.world)
    for chunk in chunks([g for g in group_ids if g not in refused]):
        yield
        ours = [g for g in chunk if owns_group(ctx.world, ctx.broker.node_id, g)]
        consumer = {g: consumer_surface.delete(ctx.world, g) for g in ours if consumer_surface.holds(ctx.world, g)}
        classic = DeleteGroupsInput(tuple(g for g in ours if g not in consumer))
        parked = service.call(service.coordinator.delete_groups, classic, lambda r: r)
        if not parked.done:  # the classic coordinator answers a delete at once
            raise RuntimeError("DeleteGroups was not answered at once")
        result: DeleteGroupsResult = parked.value
        errors.update({**dict(result.results), **consumer})
    errors.update(refused)
    result_type = codec.data_class(codec.response_type(API_KEY), "DeletableGroupResult")
    results, pacer = [], Pacer()
    for g in group_ids:
        yield from pacer.pause()
        results.append(result_type(group_id=g, error_code=int(errors.get(g, ErrorCode.NOT_COORDINATOR))))
    return codec.new_response(API_KEY, version, throttle_time_ms=0, results=results)
