"""SyncGroup (spec §8): the ordered decision list of ``GMM.classicGroupSync``.

The v5 null protocol type/name check is request-level (``KafkaApis``) and lives in the handler.
"""

from __future__ import annotations

from collections.abc import Hashable

from rebalance_lab.coordinator.classic.context import Core, sync_key
from rebalance_lab.coordinator.classic.messages import SyncGroupInput, SyncGroupResult
from rebalance_lab.coordinator.classic.model import Group, Member
from rebalance_lab.coordinator.classic.rebalance import complete_sync_future, schedule_heartbeat
from rebalance_lab.coordinator.classic.records import AssignmentStored, GenerationSnapshot, SnapshotMember
from rebalance_lab.coordinator.classic.state import GroupState
from rebalance_lab.coordinator.effects import Effects
from rebalance_lab.protocol.errors import ErrorCode

_E = ErrorCode


def sync_group(core: Core, fx: Effects, now_ms: int, inp: SyncGroupInput, token: Hashable) -> None:
    if not inp.group_id:
        fx.reply(token, SyncGroupResult(_E.INVALID_GROUP_ID))
        return
    group = core.groups.get(inp.group_id)
    error = _validate(group, inp)
    if error is not None or group is None:
        fx.reply(token, SyncGroupResult(error or _E.UNKNOWN_MEMBER_ID))
        return
    member = group.members[inp.member_id]
    if group.state is GroupState.PREPARING_REBALANCE:
        fx.reply(token, SyncGroupResult(_E.REBALANCE_IN_PROGRESS))
    elif group.state is GroupState.COMPLETING_REBALANCE:
        member.awaiting_sync = token  # a second SyncGroup orphans the first (trap §16.10)
        _mark_synced(core, group, member.member_id)
        if group.is_leader(member.member_id):
            _store_and_propagate(core, fx, group, now_ms, dict(inp.assignments))
    else:  # Stable
        _mark_synced(core, group, member.member_id)
        if not core.java:
            # Scala completes the member's heartbeat here; Java does not (spec §15 #7).
            schedule_heartbeat(core, group, member.member_id, now_ms, member.session_timeout_ms)
        fx.reply(token, SyncGroupResult(_E.NONE, group.protocol_type, group.protocol_name, member.assignment))


def _validate(group: Group | None, inp: SyncGroupInput) -> ErrorCode | None:
    if group is None or group.state is GroupState.EMPTY:
        return _E.UNKNOWN_MEMBER_ID  # Java checks Empty before anything else
    if group.state is GroupState.DEAD:
        return _E.COORDINATOR_NOT_AVAILABLE
    error = group.validate_member(inp.member_id, inp.group_instance_id)
    if error is not _E.NONE:
        return error
    if inp.generation_id != group.generation_id:
        return _E.ILLEGAL_GENERATION
    # Compared only when both sides are non-null (requests before v5 send neither).
    if inp.protocol_type is not None and group.protocol_type is not None and inp.protocol_type != group.protocol_type:
        return _E.INCONSISTENT_GROUP_PROTOCOL
    if inp.protocol_name is not None and group.protocol_name is not None and inp.protocol_name != group.protocol_name:
        return _E.INCONSISTENT_GROUP_PROTOCOL
    return None


def _mark_synced(core: Core, group: Group, member_id: str) -> None:
    group.pending_sync.discard(member_id)
    if not group.pending_sync:
        core.timers.cancel(sync_key(group.group_id))


def _store_and_propagate(core: Core, fx: Effects, group: Group, now_ms: int,
                         assignment: dict[str, bytes]) -> None:
    """Only the leader's assignments count; duplicates: the last wins; non-members are ignored;
    a member missing from the map gets empty bytes (trap §16.11). Then answer every parked
    SyncGroup (the leader's too), re-arm their session timers and go Stable."""
    members = group.members.values()
    missing = tuple(m.member_id for m in members if m.member_id not in assignment)
    for member in members:
        member.assignment = assignment.get(member.member_id, b"")
    fx.record(AssignmentStored(group.group_id, now_ms, group.generation_id, group.leader_id or "",
                               group.protocol_name, tuple((m.member_id, m.assignment) for m in members), missing))
    for member in members:
        if member.awaiting_sync is not None:
            complete_sync_future(fx, member, SyncGroupResult(_E.NONE, group.protocol_type, group.protocol_name,
                                                             member.assignment))
            schedule_heartbeat(core, group, member.member_id, now_ms, member.session_timeout_ms)
    group.transition_to(GroupState.STABLE, now_ms)
    fx.record(generation_snapshot(group, now_ms))


def generation_snapshot(group: Group, now_ms: int) -> GenerationSnapshot:
    return GenerationSnapshot(
        group.group_id, now_ms, group.generation_id, group.protocol_type, group.protocol_name, group.leader_id,
        tuple(_snapshot_member(group, m) for m in group.members.values()),
    )


def _snapshot_member(group: Group, m: Member) -> SnapshotMember:
    return SnapshotMember(m.member_id, m.group_instance_id, m.client_id, m.client_host, m.session_timeout_ms,
                          m.rebalance_timeout_ms, m.metadata_for(group.protocol_name), m.assignment)
