"""Heartbeat (spec §9.1) and the member timer bodies (§9.2): session and pending-member expiry."""

from __future__ import annotations

from collections.abc import Hashable

from rebalance_lab.coordinator.classic.context import Core
from rebalance_lab.coordinator.classic.messages import HeartbeatInput, HeartbeatResult, JoinGroupResult
from rebalance_lab.coordinator.classic.model import Group
from rebalance_lab.coordinator.classic.rebalance import (
    complete_join_after_removal,
    complete_join_future,
    maybe_prepare_rebalance_or_complete_join,
    schedule_heartbeat,
)
from rebalance_lab.coordinator.classic.records import MemberExpired, PendingMemberExpired, RebalanceNotified
from rebalance_lab.coordinator.classic.state import GroupState
from rebalance_lab.coordinator.effects import Effects
from rebalance_lab.protocol.errors import ErrorCode

_E = ErrorCode
_ANSWER = {
    GroupState.PREPARING_REBALANCE: _E.REBALANCE_IN_PROGRESS,
    GroupState.COMPLETING_REBALANCE: _E.NONE,
    GroupState.STABLE: _E.NONE,
}

# One result per error code, made once: results are frozen values, and one is made per heartbeat otherwise
_RESULTS = {code: HeartbeatResult(code) for code in ErrorCode}


def heartbeat(core: Core, fx: Effects, now_ms: int, inp: HeartbeatInput, token: Hashable) -> None:
    error = _heartbeat(core, now_ms, inp)
    if error is _E.REBALANCE_IN_PROGRESS:
        # How a follower learns of a rebalance (issue 19); a reader shows the first per member per rebalance.
        fx.record(RebalanceNotified(inp.group_id, now_ms, inp.member_id, inp.generation_id))
    fx.reply(token, _RESULTS[error])


def _heartbeat(core: Core, now_ms: int, inp: HeartbeatInput) -> ErrorCode:
    if not inp.group_id:
        return _E.INVALID_GROUP_ID
    group = core.groups.get(inp.group_id)
    if group is None:
        return _E.UNKNOWN_MEMBER_ID
    if group.state is GroupState.DEAD:
        return _E.COORDINATOR_NOT_AVAILABLE
    error = group.validate_member(inp.member_id, inp.group_instance_id)
    if error is not _E.NONE:
        return error
    if inp.generation_id != group.generation_id:
        return _E.ILLEGAL_GENERATION  # no timer reset on any error (trap §16.17)
    answer = _ANSWER.get(group.state)
    if answer is None:  # Empty: unreachable with a valid member
        return _E.UNKNOWN_MEMBER_ID
    member = group.members[inp.member_id]
    schedule_heartbeat(core, group, member.member_id, now_ms, member.session_timeout_ms)
    return answer


def on_member_timeout(core: Core, fx: Effects, group: Group, member_id: str, now_ms: int) -> None:
    """``expireClassicGroupMemberHeartbeat``."""
    if group.state is GroupState.DEAD:
        return
    if member_id in group.pending_join:
        group.remove(member_id)
        fx.record(PendingMemberExpired(group.group_id, now_ms, member_id, "timeout"))
        complete_join_after_removal(core, fx, group, now_ms)
        return
    member = group.members.get(member_id)
    if member is None or member.has_satisfied_heartbeat():
        return  # a parked, non-new member is not expired and its timer is not re-armed
    # A parked new member is answered before removal (GMMT testNewMemberJoinExpiration).
    complete_join_future(fx, member, JoinGroupResult(_E.UNKNOWN_MEMBER_ID))
    group.remove(member_id)
    cause = "new_member_join_timeout" if member.is_new else "session_timeout"
    fx.record(MemberExpired(group.group_id, now_ms, member_id, member.group_instance_id, cause, group.leader_id))
    reason = f"removing member {member_id} on heartbeat expiration."
    if group.state is GroupState.PREPARING_REBALANCE:
        complete_join_after_removal(core, fx, group, now_ms)
    elif group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
        maybe_prepare_rebalance_or_complete_join(core, fx, group, now_ms, reason, "session_timeout")
