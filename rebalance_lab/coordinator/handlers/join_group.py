"""JoinGroup (11), v0-9 (spec §1.2, §5): wire <-> :class:`JoinGroupInput`/:class:`JoinGroupResult`."""

from __future__ import annotations

from typing import Any

from rebalance_lab.coordinator.classic.messages import JoinGroupInput, JoinGroupResult, ProtocolEntry
from rebalance_lab.coordinator.group_service import service_of
from rebalance_lab.coordinator.handlers import authz
from rebalance_lab.coordinator.handlers.base import Parked, RequestContext
from rebalance_lab.coordinator.routing import check_coordinator
from rebalance_lab.protocol.classic_group_codec import JoinGroupResponse
from rebalance_lab.protocol.errors import ErrorCode

API_KEY = 11


def to_input(ctx: RequestContext, request: Any) -> JoinGroupInput:
    version = ctx.api_version
    session = int(request.session_timeout_ms)
    return JoinGroupInput(
        group_id=request.group_id or "",
        member_id=request.member_id or "",
        protocol_type=request.protocol_type or "",
        protocols=tuple(ProtocolEntry(p.name, bytes(p.metadata or b"")) for p in request.protocols or ()),
        session_timeout_ms=session,
        # JoinGroupRequest: v0 has no rebalance timeout; the broker uses the session timeout.
        rebalance_timeout_ms=int(request.rebalance_timeout_ms) if version >= 1 else session,
        api_version=version,
        group_instance_id=request.group_instance_id if version >= 5 else None,
        client_id=ctx.client_id,
        client_host=ctx.client_host,
        reason=request.reason if version >= 8 else None,
    )


def protocol_name_for(version: int, name: str | None) -> str | None:
    """v<7 cannot send null (it becomes ""); v>=7 sends "" as null (``JoinGroupResponse``)."""
    if version < 7:
        return name or ""
    return name or None


def to_response(version: int, result: JoinGroupResult) -> JoinGroupResponse:
    """The fast codec's answer (``codec.encode_response`` writes it, ``codec.generic`` converts it); the leader's
    member list is the coordinator's own tuple, written once, with no message object per member (issue 22)."""
    return JoinGroupResponse(version, 0, int(result.error), result.generation_id, result.protocol_type,
                             protocol_name_for(version, result.protocol_name), result.leader, result.skip_assignment,
                             result.member_id, result.members)


def error_response(version: int, request: Any, code: ErrorCode) -> Any:
    """``JoinGroupRequest.getErrorResponse``: memberId "" (not echoed), generation -1."""
    return to_response(version, JoinGroupResult(code))


def handle(ctx: RequestContext, request: Any) -> Parked:
    authz.require_group(ctx, authz.READ, request.group_id or "")
    inp = to_input(ctx, request)
    cfg = ctx.world.config.group
    if inp.group_id and cfg.min_session_timeout_ms <= inp.session_timeout_ms <= cfg.max_session_timeout_ms:
        # GCS validates the group id and session timeout before routing to a shard.
        check_coordinator(ctx.world, ctx.broker.node_id, inp.group_id)
    service = service_of(ctx.world)
    version = ctx.api_version
    return service.call(service.routing.join_group, inp, lambda r: to_response(version, r))
