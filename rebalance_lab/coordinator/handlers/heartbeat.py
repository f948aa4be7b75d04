"""Heartbeat (12), v0-4 (spec §9.1)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rebalance_lab.coordinator.classic.messages import HeartbeatInput, HeartbeatResult
from rebalance_lab.coordinator.group_service import service_of
from rebalance_lab.coordinator.handlers import authz
from rebalance_lab.coordinator.handlers.base import Parked, RequestContext
from rebalance_lab.coordinator.routing import check_coordinator
from rebalance_lab.protocol.classic_heartbeat_codec import HeartbeatResponse

API_KEY = 12


def _builder(version: int) -> Callable[[HeartbeatResult], HeartbeatResponse]:
    """The fast codec's response object (``codec.encode_response`` writes it; ``codec.generic`` converts it)."""
    return lambda result: HeartbeatResponse(version, 0, int(result.error))


# One response builder per version, made once rather than a closure per heartbeat (issue 22)
_BUILDERS = tuple(_builder(version) for version in range(5))


def handle(ctx: RequestContext, request: Any) -> Parked:
    authz.require_group(ctx, authz.READ, request.group_id or "")
    version = ctx.api_version
    inp = HeartbeatInput(request.group_id or "", request.member_id or "", int(request.generation_id),
                         request.group_instance_id if version >= 3 else None)
    if inp.group_id:
        check_coordinator(ctx.world, ctx.broker.node_id, inp.group_id)
    service = service_of(ctx.world)
    build = _BUILDERS[version] if version < len(_BUILDERS) else _builder(version)
    return service.call(service.routing.heartbeat, inp, build)
