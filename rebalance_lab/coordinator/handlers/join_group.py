"""JoinGroup (11), v0-9 (spec §1.2, §5): wire <-> :class:`JoinGroupInput`/:class:`JoinGroupResult`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rebalance_lab.coordinator.classic.messages import JoinGroupInput, JoinGroupResult, ProtocolEntry
from rebalance_lab.coordinator.group_service import service_of
from rebalance_lab.coordinator.handlers import authz
from rebalance_lab.coordinator.handlers.base import Parked, RequestContext
from rebalance_lab.coordinator.routing import check_coordinator
from rebalance_lab.protocol.classic_group_codec import JoinGroupResponse
from rebalance_lab.protocol.errors import ErrorCode

API_KEY = 11


# Protocol lists as sent, one tuple of values per distinct list (the classic and the compact form apart: the same
# bytes read differently in the two). A group's members usually send one same list: they share one tuple, made
# once, instead of a tuple and its entries per JoinGroup kept until the member's next one (issue 22).
_OFFERS: tuple[dict[bytes, tuple[ProtocolEntry, ...]], dict[bytes, tuple[ProtocolEntry, ...]]] = ({}, {})
_MAX_OFFERS = 1024  # distinct lists kept; past that the cache starts again (a bound, not an eviction policy)


def _protocols(version: int, request: Any) -> tuple[ProtocolEntry, ...]:
    key = getattr(request, "protocols_key", None)  # the fast codec's bodies have it; the generic codec's do not
    if key is None:
        return tuple(ProtocolEntry(p.name, bytes(p.metadata or b"")) for p in request.protocols or ())
    offers = _OFFERS[version >= 6]
    entries = offers.get(key)
    if entries is None:
        entries = tuple(ProtocolEntry(p.name, p.metadata) for p in request.protocols)
        if len(offers) >= _MAX_OFFERS:
            offers.clear()
        offers[key] = entries
    return entries


def to_input(ctx: RequestContext, request: Any) -> JoinGroupInput:
    version = ctx.api_version
    session = int(request.session_timeout_ms)
    # Positional (a NamedTuple's keywords cost about as much again): JoinGroupInput's field order.
    return JoinGroupInput(
        request.group_id or "",
        request.member_id or "",
        request.protocol_type or "",
        _protocols(version, request),
        session,
        # JoinGroupRequest: v0 has no rebalance timeout; the broker uses the session timeout.
        int(request.rebalance_timeout_ms) if version >= 1 else session,
        version,
        request.group_instance_id if version >= 5 else None,
        ctx.client_id,
        ctx.client_host,
        request.reason if version >= 8 else None,
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


def _builder(version: int) -> Callable[[JoinGroupResult], JoinGroupResponse]:
    return lambda result: to_response(version, result)


# One response builder per version, made once rather than a closure per JoinGroup (issue 22)
_BUILDERS = tuple(_builder(version) for version in range(10))


def handle(ctx: RequestContext, request: Any) -> Parked:
    authz.require_group(ctx, authz.READ, request.group_id or "")
    inp = to_input(ctx, request)
    cfg = ctx.world.config.group
    if inp.group_id and cfg.min_session_timeout_ms <= inp.session_timeout_ms <= cfg.max_session_timeout_ms:
        # GCS validates the group id and session timeout before routing to a shard.
        check_coordinator(ctx.world, ctx.broker.node_id, inp.group_id)
    service = service_of(ctx.world)
    version = ctx.api_version
    build = _BUILDERS[version] if version < len(_BUILDERS) else _builder(version)
    return service.call(service.routing.join_group, inp, build)
