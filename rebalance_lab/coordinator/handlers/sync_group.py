"""SyncGroup (14), v0-5 (spec §1.2, §8)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rebalance_lab.coordinator.classic.messages import SyncGroupInput, SyncGroupResult
from rebalance_lab.coordinator.group_service import service_of
from rebalance_lab.coordinator.handlers import authz
from rebalance_lab.coordinator.handlers.base import Parked, RequestContext
from rebalance_lab.coordinator.routing import check_coordinator
from rebalance_lab.protocol.classic_group_codec import SyncGroupResponse
from rebalance_lab.protocol.errors import ErrorCode

API_KEY = 14


def to_input(ctx: RequestContext, request: Any) -> SyncGroupInput:
    version = ctx.api_version
    assignments = request.assignments
    # Positional (a NamedTuple's keywords cost about as much again): SyncGroupInput's field order.
    return SyncGroupInput(
        request.group_id or "",
        request.member_id or "",
        int(request.generation_id),
        request.group_instance_id if version >= 3 else None,
        request.protocol_type if version >= 5 else None,
        request.protocol_name if version >= 5 else None,
        tuple((a.member_id, bytes(a.assignment or b"")) for a in assignments) if assignments else (),
        version,
    )


def to_response(version: int, result: SyncGroupResult) -> SyncGroupResponse:
    """The fast codec's answer (``codec.encode_response`` writes it, ``codec.generic`` converts it)."""
    return SyncGroupResponse(version, 0, int(result.error), result.protocol_type, result.protocol_name,
                             result.assignment)


def error_response(version: int, request: Any, code: ErrorCode) -> Any:
    return to_response(version, SyncGroupResult(code))


def _builder(version: int) -> Callable[[SyncGroupResult], SyncGroupResponse]:
    return lambda result: to_response(version, result)


# One response builder per version, made once rather than a closure per SyncGroup (issue 22)
_BUILDERS = tuple(_builder(version) for version in range(6))


def handle(ctx: RequestContext, request: Any) -> Any:
    version = ctx.api_version
    if version >= 5 and (request.protocol_type is None or request.protocol_name is None):
        # KafkaApis rejects this before authorisation and before the coordinator sees it.
        return error_response(version, request, ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    authz.require_group(ctx, authz.READ, request.group_id or "")
    inp = to_input(ctx, request)
    if inp.group_id:
        check_coordinator(ctx.world, ctx.broker.node_id, inp.group_id)
    service = service_of(ctx.world)
    build = _BUILDERS[version] if version < len(_BUILDERS) else _builder(version)
    parked: Parked = service.call(service.routing.sync_group, inp, build)
    return parked
