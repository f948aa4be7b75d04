"""LeaveGroup (13): one member in v0-2, a batch in v3+ (KIP-345) (spec §1.2, §10)."""

from __future__ import annotations

from typing import Any

from rebalance_lab.coordinator.classic.messages import LeaveGroupInput, LeaveGroupResult, LeaveMember
from rebalance_lab.coordinator.group_service import service_of
from rebalance_lab.coordinator.handlers import authz
from rebalance_lab.coordinator.handlers.base import Parked, RequestContext
from rebalance_lab.coordinator.routing import check_coordinator
from rebalance_lab.protocol import codec
from rebalance_lab.protocol.errors import ErrorCode

API_KEY = 13


def to_input(version: int, request: Any) -> LeaveGroupInput:
    if version < 3:
        # LeaveGroupRequest.normalizedData: v0-2 become a one-member list without instance id.
        members: tuple[LeaveMember, ...] = (LeaveMember(request.member_id or ""),)
    else:
        members = tuple(
            LeaveMember(m.member_id or "", m.group_instance_id, m.reason if version >= 5 else None)
            for m in request.members or ()
        )
    return LeaveGroupInput(request.group_id or "", members, version)


def to_response(version: int, result: LeaveGroupResult) -> Any:
    if version < 3:
        # The top-level error if set, otherwise that single member's (LeaveGroupResponse).
        error = result.error
        if error is ErrorCode.NONE and result.members:
            error = result.members[0].error
        return codec.new_response(API_KEY, version, throttle_time_ms=0, error_code=int(error))
    member = codec.data_class(codec.response_type(API_KEY), "MemberResponse")
    return codec.new_response(
        API_KEY, version, throttle_time_ms=0, error_code=int(result.error),
        members=[member(member_id=m.member_id, group_instance_id=m.group_instance_id, error_code=int(m.error))
                 for m in result.members],
    )


def error_response(version: int, request: Any, code: ErrorCode) -> Any:
    return to_response(version, LeaveGroupResult(code))


def handle(ctx: RequestContext, request: Any) -> Parked:
    authz.require_group(ctx, authz.READ, request.group_id or "")
    version = ctx.api_version
    inp = to_input(version, request)
    if inp.group_id:
        check_coordinator(ctx.world, ctx.broker.node_id, inp.group_id)
    service = service_of(ctx.world)
    return service.call(service.routing.leave_group, inp, lambda r: to_response(version, r))
