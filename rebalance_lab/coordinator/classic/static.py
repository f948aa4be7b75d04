"""KIP-345 static member replacement: a known group.instance.id joins with memberId "" (spec §5.4).

Java ``GMM.updateStaticMemberThenRebalanceOrCompleteJoin`` and ``CG.replaceStaticMember``.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import replace

from rebalance_lab.coordinator.classic.context import Core
from rebalance_lab.coordinator.classic.messages import (
    JoinGroupInput,
    JoinGroupResult,
    SyncGroupResult,
    client_reason,
)
from rebalance_lab.coordinator.classic.model import Group, Member
from rebalance_lab.coordinator.classic.protocol_selection import select_protocol
from rebalance_lab.coordinator.classic.rebalance import (
    cancel_heartbeat,
    complete_join_future,
    complete_sync_future,
    leader_member_list,
    maybe_complete_join,
    prepare_rebalance,
    schedule_heartbeat,
)
from rebalance_lab.coordinator.classic.records import StaticMemberReplaced
from rebalance_lab.coordinator.classic.state import GroupState
from rebalance_lab.coordinator.effects import Effects
from rebalance_lab.protocol.errors import ErrorCode


def replace_static_member(core: Core, fx: Effects, group: Group, now_ms: int, inp: JoinGroupInput,
                          new_id: str, token: Hashable) -> None:
    instance_id = inp.group_instance_id
    assert instance_id is not None
    current_leader = group.leader_id
    old_id = group.static_members[instance_id]
    new = _swap(fx, group, old_id, new_id)
    cancel_heartbeat(core, group, old_id)
    schedule_heartbeat(core, group, new_id, now_ms, new.session_timeout_ms)  # the copied timeout
    new.update(inp.protocols, inp.rebalance_timeout_ms, inp.session_timeout_ms)
    new.park_join(token)
    fx.record(StaticMemberReplaced(group.group_id, now_ms, instance_id, old_id, new_id,
                                   inp.protocols, group.generation_id,
                                   group.leader_id))
    if group.state is GroupState.STABLE:
        _replace_in_stable(core, fx, group, now_ms, inp, new, current_leader)
    elif group.state is GroupState.COMPLETING_REBALANCE:
        prepare_rebalance(core, fx, group, now_ms, f"Updating metadata for static member {new_id} with "
                          f"instance id {instance_id}; client reason: {client_reason(inp)}", "static_rejoin_metadata")
    else:  # PreparingRebalance (Empty/Dead cannot hold a static mapping)
        maybe_complete_join(core, fx, group, now_ms)


def _swap(fx: Effects, group: Group, old_id: str, new_id: str) -> Member:
    """The old member's parked requests are fenced; the new id copies every field (assignment too)."""
    old = group.members[old_id]
    complete_join_future(fx, old, JoinGroupResult(ErrorCode.FENCED_INSTANCE_ID, member_id=old_id))
    complete_sync_future(fx, old, SyncGroupResult(ErrorCode.FENCED_INSTANCE_ID))
    new = replace(old, member_id=new_id, awaiting_join=None, awaiting_sync=None, is_new=False, tally=None)
    group.replace_member(old_id, new)
    if group.leader_id == old_id:
        group.leader_id = new_id
    assert new.group_instance_id is not None
    group.static_members[new.group_instance_id] = new_id
    return new


def _replace_in_stable(core: Core, fx: Effects, group: Group, now_ms: int, inp: JoinGroupInput,
                       member: Member, current_leader: str | None) -> None:
    """No rebalance unless the selected protocol changes (trap §16.5); KIP-814 for v9+."""
    if select_protocol(group).winner != group.protocol_name:
        prepare_rebalance(core, fx, group, now_ms, f"Group's selectedProtocol will change because static "
                          f"member {member.member_id} with instance id {inp.group_instance_id} joined with "
                          f"change of protocol; client reason: {client_reason(inp)}", "protocol_change")
        return
    is_leader = group.is_leader(member.member_id)
    if inp.api_version >= 9:
        result = JoinGroupResult(
            ErrorCode.NONE, member.member_id, group.generation_id, group.protocol_type, group.protocol_name,
            leader=group.leader_id or "", skip_assignment=is_leader,
            members=leader_member_list(group) if is_leader else (),
        )
    else:
        # v<9 answers with the leader captured *before* the replacement (trap §16.4): a
        # returning static leader sees itself as a follower and does not re-assign.
        result = JoinGroupResult(ErrorCode.NONE, member.member_id, group.generation_id, group.protocol_type,
                                 group.protocol_name, leader=current_leader or "")
    complete_join_future(fx, member, result)
