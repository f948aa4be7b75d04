"""LeaveGroup, single (v0-2) and batch (v3+, KIP-345) (spec §10)."""

from __future__ import annotations

from collections.abc import Hashable

from rebalance_lab.coordinator.classic.context import Core
from rebalance_lab.coordinator.classic.messages import (
    JoinGroupResult,
    LeaveGroupInput,
    LeaveGroupResult,
    LeaveMember,
    LeaveMemberResult,
)
from rebalance_lab.coordinator.classic.model import Group
from rebalance_lab.coordinator.classic.rebalance import (
    cancel_heartbeat,
    complete_join_future,
    maybe_prepare_rebalance_or_complete_join,
)
from rebalance_lab.coordinator.classic.records import MemberLeft, PendingMemberExpired
from rebalance_lab.coordinator.classic.state import GroupState
from rebalance_lab.coordinator.effects import Effects
from rebalance_lab.protocol.errors import ErrorCode

_E = ErrorCode


def leave_group(core: Core, fx: Effects, now_ms: int, inp: LeaveGroupInput, token: Hashable) -> None:
    if not inp.group_id:
        fx.reply(token, LeaveGroupResult(_E.INVALID_GROUP_ID))
        return
    group = core.groups.get(inp.group_id)
    if group is None:
        # Unknown group: top level 0, every entry UNKNOWN_MEMBER_ID (v0-2 flattens it to 25).
        entries = tuple(LeaveMemberResult(m.member_id, m.group_instance_id, _E.UNKNOWN_MEMBER_ID)
                        for m in inp.members)
        fx.reply(token, LeaveGroupResult(_E.NONE, entries))
        return
    if group.state is GroupState.DEAD:
        fx.reply(token, LeaveGroupResult(_E.COORDINATOR_NOT_AVAILABLE))
        return
    results = tuple(_leave_one(core, fx, group, now_ms, m) for m in inp.members)
    left = [r for r in results if r.error is _E.NONE]
    if left:
        maybe_prepare_rebalance_or_complete_join(core, fx, group, now_ms, _reason(core, inp, left), "member_leave")
    fx.reply(token, LeaveGroupResult(_E.NONE, results))


def _reason(core: Core, inp: LeaveGroupInput, left: list[LeaveMemberResult]) -> str:
    """Java names every member that left (as echoed); Scala rebalances on the first removal."""
    if core.java:
        return f"explicit `LeaveGroup` request for ({', '.join(r.member_id for r in left)}) members."
    first = next(m for m in inp.members if m.member_id == left[0].member_id)
    return f"Removing member {left[0].member_id} on LeaveGroup; client reason: {first.reason or 'not provided'}"


def _leave_one(core: Core, fx: Effects, group: Group, now_ms: int, who: LeaveMember) -> LeaveMemberResult:
    """One identity, answered with the request's own member id and instance id echoed."""
    member_id = who.member_id
    if member_id == "":
        mapped = group.static_members.get(who.group_instance_id) if who.group_instance_id is not None else None
        if mapped is None:
            return LeaveMemberResult(member_id, who.group_instance_id, _E.UNKNOWN_MEMBER_ID)
        member_id = mapped  # the entry still echoes "" (GMMT testLeaveGroupStaticMemberWithUnknownMemberId)
    elif member_id in group.pending_join:
        group.remove(member_id)
        cancel_heartbeat(core, group, member_id)
        fx.record(PendingMemberExpired(group.group_id, now_ms, member_id, "leave"))
        return LeaveMemberResult(who.member_id, who.group_instance_id, _E.NONE)
    else:
        error = group.validate_member(member_id, who.group_instance_id)
        if error is not _E.NONE:
            return LeaveMemberResult(who.member_id, who.group_instance_id, error)
    _remove_member(core, fx, group, now_ms, member_id)
    return LeaveMemberResult(who.member_id, who.group_instance_id, _E.NONE)


def _remove_member(core: Core, fx: Effects, group: Group, now_ms: int, member_id: str) -> None:
    member = group.members[member_id]
    complete_join_future(fx, member, JoinGroupResult(_E.UNKNOWN_MEMBER_ID))
    cancel_heartbeat(core, group, member_id)
    group.remove(member_id)
    fx.record(MemberLeft(group.group_id, now_ms, member_id, member.group_instance_id, "member_leave",
                         group.leader_id))
