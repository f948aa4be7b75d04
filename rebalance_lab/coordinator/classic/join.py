"""JoinGroup (spec §5): the ordered decision list of Java ``GMM.classicGroupJoin*``.

Reason strings are Kafka's own (spec/replay-inputs.md §2.3) so recordings read like broker logs.
"""

from __future__ import annotations

from collections.abc import Hashable

from rebalance_lab.coordinator.classic.context import Core
from rebalance_lab.coordinator.classic.messages import JoinGroupInput, JoinGroupResult, client_reason
from rebalance_lab.coordinator.classic.model import Group, Member
from rebalance_lab.coordinator.classic.rebalance import (
    join_result_for,
    maybe_complete_join,
    maybe_prepare_rebalance_or_complete_join,
    prepare_rebalance,
    schedule_heartbeat,
)
from rebalance_lab.coordinator.classic.records import (
    GroupCreated,
    JoinRefused,
    MemberJoined,
    MemberLeft,
    MemberRejoined,
    PendingMemberAdded,
)
from rebalance_lab.coordinator.classic.state import GroupState
from rebalance_lab.coordinator.classic.static import replace_static_member
from rebalance_lab.coordinator.effects import Effects
from rebalance_lab.protocol.errors import ErrorCode

_E = ErrorCode


def join_group(core: Core, fx: Effects, now_ms: int, inp: JoinGroupInput, token: Hashable) -> None:
    error = _validate_request(core, inp)
    if error is not None:
        fx.reply(token, JoinGroupResult(error, member_id=inp.member_id))
        return
    group = core.groups.get(inp.group_id)
    if group is None:
        if inp.member_id != "":
            fx.reply(token, JoinGroupResult(_E.UNKNOWN_MEMBER_ID, member_id=inp.member_id))
            return  # the group is not created (GMMT testJoinGroupUnknownMemberNewGroup)
        group = Group(inp.group_id, core.flavor, now_ms)
        core.groups[inp.group_id] = group
        fx.record(GroupCreated(inp.group_id, now_ms, "join"))
    if not _accept_joining_member(core, group, inp.member_id):
        _reject_group_full(fx, group, now_ms, inp.member_id)
        _refuse(fx, group, now_ms, inp, _E.GROUP_MAX_SIZE_REACHED)
        fx.reply(token, JoinGroupResult(_E.GROUP_MAX_SIZE_REACHED))
        return
    if inp.member_id == "":
        _join_new_member(core, fx, group, now_ms, inp, token)
    else:
        _join_existing_member(core, fx, group, now_ms, inp, token)


def _validate_request(core: Core, inp: JoinGroupInput) -> ErrorCode | None:
    """Rules 4-5: checked before any group lookup, so a rejected join creates no group."""
    if not inp.group_id:
        return _E.INVALID_GROUP_ID
    cfg = core.config
    if not cfg.min_session_timeout_ms <= inp.session_timeout_ms <= cfg.max_session_timeout_ms:
        return _E.INVALID_SESSION_TIMEOUT
    return None


def _accept_joining_member(core: Core, group: Group, member_id: str) -> bool:
    """``acceptJoiningMember`` (rule 9): runs even for memberId "" before MEMBER_ID_REQUIRED."""
    max_size = core.config.max_size
    if group.state in (GroupState.EMPTY, GroupState.DEAD):
        return True
    member = group.members.get(member_id)
    if group.state is GroupState.PREPARING_REBALANCE:
        return (member is not None and member.awaiting_join is not None) or group.num_awaiting_join() < max_size
    return member is not None or len(group.members) < max_size


def _reject_group_full(fx: Effects, group: Group, now_ms: int, member_id: str) -> None:
    """The rejected id is removed (member or pending), its timer left running (trap §16.16)."""
    member = group.remove(member_id)
    if member is not None:
        fx.record(MemberLeft(group.group_id, now_ms, member_id, member.group_instance_id,
                             "group_max_size", group.leader_id))


def _refuse(fx: Effects, group: Group, now_ms: int, inp: JoinGroupInput, error: ErrorCode) -> None:
    """Record a JoinGroup refused without a state change (issue 19: INCONSISTENT_GROUP_PROTOCOL during a rolling
    assignor change left no trace), with the protocols every member offers, the joiner had to share one of."""
    offered = tuple(group.candidates()) if len(group.members) else ()
    fx.record(JoinRefused(group.group_id, now_ms, inp.member_id, inp.group_instance_id, inp.client_id,
                          tuple(p.name for p in inp.protocols), error.name, group.state.value, group.generation_id,
                          offered))


def _join_new_member(core: Core, fx: Effects, group: Group, now_ms: int, inp: JoinGroupInput,
                     token: Hashable) -> None:
    if group.state is GroupState.DEAD:
        fx.reply(token, JoinGroupResult(_E.COORDINATOR_NOT_AVAILABLE))
        return
    if not group.supports_protocols(inp.protocol_type, inp.protocols):
        _refuse(fx, group, now_ms, inp, _E.INCONSISTENT_GROUP_PROTOCOL)
        fx.reply(token, JoinGroupResult(_E.INCONSISTENT_GROUP_PROTOCOL))
        return
    # CG.generateMemberId: the static id is built from the instance id, not the client id.
    new_id = f"{inp.group_instance_id if inp.group_instance_id is not None else inp.client_id}-{core.new_uuid()}"
    if inp.group_instance_id is not None:
        if inp.group_instance_id in group.static_members:
            replace_static_member(core, fx, group, now_ms, inp, new_id, token)
        else:
            add_member_then_rebalance(core, fx, group, now_ms, inp, new_id, token)
    elif inp.api_version >= 4:
        _require_member_id(core, fx, group, now_ms, inp, new_id, token)
    else:
        add_member_then_rebalance(core, fx, group, now_ms, inp, new_id, token)


def _require_member_id(core: Core, fx: Effects, group: Group, now_ms: int, inp: JoinGroupInput,
                       new_id: str, token: Hashable) -> None:
    """KIP-394: remember the id as pending, expire it after its session timeout; no state change."""
    group.pending_join.add(new_id)
    schedule_heartbeat(core, group, new_id, now_ms, inp.session_timeout_ms)
    fx.record(PendingMemberAdded(group.group_id, now_ms, new_id, inp.client_id, inp.client_host,
                                 inp.session_timeout_ms, tuple(p.name for p in inp.protocols)))
    fx.reply(token, JoinGroupResult(_E.MEMBER_ID_REQUIRED, member_id=new_id))


def add_member_then_rebalance(core: Core, fx: Effects, group: Group, now_ms: int, inp: JoinGroupInput,
                              member_id: str, token: Hashable) -> None:
    """``addMemberThenRebalanceOrCompleteJoin`` (§5.3)."""
    member = Member(member_id, inp.group_instance_id, inp.client_id, inp.client_host, inp.rebalance_timeout_ms,
                    inp.session_timeout_ms, inp.protocol_type, inp.protocols, awaiting_join=token, is_new=True)
    if group.state is GroupState.PREPARING_REBALANCE and _counts_as_new_member(core, group):
        group.new_member_added = True
    group.add(member)
    # A new member's session clock starts only at join completion; until then it has 5 minutes.
    schedule_heartbeat(core, group, member_id, now_ms, core.config.new_member_join_timeout_ms)
    fx.record(MemberJoined(group.group_id, now_ms, member_id, inp.group_instance_id, inp.client_id,
                           inp.client_host, inp.protocol_type, inp.protocols,
                           inp.session_timeout_ms, inp.rebalance_timeout_ms, group.generation_id,
                           group.is_leader(member_id)))
    reason = (f"Adding new member {member_id} with group instance id {inp.group_instance_id or 'null'}; "
              f"client reason: {client_reason(inp)}")
    maybe_prepare_rebalance_or_complete_join(core, fx, group, now_ms, reason, "member_join")


def _counts_as_new_member(core: Core, group: Group) -> bool:
    """Feeds the initial-delay extension: Java while the rebalance started from Empty,
    Scala only while the group is brand new (generation 0) — spec §15 #3."""
    if core.java:
        return group.previous_state is GroupState.EMPTY
    return group.generation_id == 0


def _join_existing_member(core: Core, fx: Effects, group: Group, now_ms: int, inp: JoinGroupInput,
                          token: Hashable) -> None:
    echo = inp.member_id
    if group.state is GroupState.DEAD:
        fx.reply(token, JoinGroupResult(_E.COORDINATOR_NOT_AVAILABLE, member_id=echo))
        return
    if not group.supports_protocols(inp.protocol_type, inp.protocols):
        _refuse(fx, group, now_ms, inp, _E.INCONSISTENT_GROUP_PROTOCOL)
        fx.reply(token, JoinGroupResult(_E.INCONSISTENT_GROUP_PROTOCOL, member_id=echo))
        return
    if echo in group.pending_join:
        if inp.group_instance_id is not None:
            # An IllegalStateException in the broker, surfacing as UNKNOWN_SERVER_ERROR.
            fx.reply(token, JoinGroupResult(_E.UNKNOWN_SERVER_ERROR, member_id=echo))
            return
        add_member_then_rebalance(core, fx, group, now_ms, inp, echo, token)
        return
    error = group.validate_member(echo, inp.group_instance_id)
    if error is not ErrorCode.NONE:
        _refuse(fx, group, now_ms, inp, error)
        fx.reply(token, JoinGroupResult(error, member_id=echo))
        return
    _rejoin(core, fx, group, now_ms, inp, group.members[echo], token)


def _rejoin(core: Core, fx: Effects, group: Group, now_ms: int, inp: JoinGroupInput, member: Member,
            token: Hashable) -> None:
    """Dispatch on state (§5.1 rule 11.5). A rejoin never re-arms the member's session timer."""
    changed = not member.matches(inp.protocols)
    fx.record(MemberRejoined(group.group_id, now_ms, member.member_id, member.group_instance_id,
                             inp.protocols, changed, group.state.value,
                             group.generation_id))
    state, cr = group.state, client_reason(inp)
    if state is GroupState.PREPARING_REBALANCE:
        update_member(member, inp, token)
        maybe_complete_join(core, fx, group, now_ms)
    elif state is GroupState.COMPLETING_REBALANCE and changed:
        update_member(member, inp, token)
        prepare_rebalance(core, fx, group, now_ms, f"Updating metadata for member {member.member_id} during "
                          f"CompletingRebalance; client reason: {cr}", "member_metadata_change")
    elif state is GroupState.STABLE and group.is_leader(member.member_id):
        update_member(member, inp, token)  # the leader always rebalances (trap §16.3)
        prepare_rebalance(core, fx, group, now_ms, f"Leader {member.member_id} re-joining group during "
                          f"Stable; client reason: {cr}", "leader_rejoin")
    elif state is GroupState.STABLE and changed:
        update_member(member, inp, token)
        prepare_rebalance(core, fx, group, now_ms, f"Updating metadata for member {member.member_id} during "
                          f"Stable; client reason: {cr}", "member_metadata_change")
    elif state in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
        _reply_current_generation(fx, group, member.member_id, token)
    else:  # Empty: impossible in normal operation
        fx.reply(token, JoinGroupResult(_E.UNKNOWN_MEMBER_ID, member_id=member.member_id))


def _reply_current_generation(fx: Effects, group: Group, member_id: str, token: Hashable) -> None:
    """An unchanged member rejoining: the current generation at once, no new rebalance.

    In CompletingRebalance the leader gets the member list again; in Stable the
    requester is a follower (the leader always rebalances) and gets ``[]``.
    """
    fx.reply(token, join_result_for(group, member_id))


def update_member(member: Member, inp: JoinGroupInput, token: Hashable) -> None:
    """``CG.updateMember``: new protocols and timeouts, park the request.

    A member that is already parked has its old handle overwritten: that earlier
    request never gets an answer (trap §16.10).
    """
    member.update(inp.protocols, inp.rebalance_timeout_ms, inp.session_timeout_ms)  # the group's counts follow
    member.park_join(token)

