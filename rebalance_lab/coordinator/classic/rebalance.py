"""The rebalance machinery shared by join, sync, heartbeat, leave and the timers (spec §4.3, §5.5, §6).

Java ``GMM.prepareRebalance``, ``maybeCompleteJoinPhase``, ``completeClassicGroupJoin``,
``tryCompleteInitialRebalanceElseSchedule``; Scala ``S-GC.prepareRebalance``,
``onCompleteJoin`` and ``InitialDelayedJoin``.
"""

from __future__ import annotations

from rebalance_lab.coordinator.classic.context import (
    Core,
    InitialDelay,
    MemberTimeout,
    PendingSync,
    RebalanceTimeout,
    TimerKind,
    heartbeat_key,
    join_key,
    sync_key,
)
from rebalance_lab.coordinator.classic.messages import JoinedMember, JoinGroupResult, SyncGroupResult
from rebalance_lab.coordinator.classic.model import Group, Member
from rebalance_lab.coordinator.classic.protocol_selection import select_protocol
from rebalance_lab.coordinator.classic.records import (
    GenerationStarted,
    GroupEmpty,
    InitialDelayExtended,
    MembersDroppedNotRejoined,
    RebalancePrepared,
)
from rebalance_lab.coordinator.classic.state import CAN_REBALANCE, GroupState
from rebalance_lab.coordinator.effects import Effects
from rebalance_lab.coordinator.join_race import TOGETHER
from rebalance_lab.protocol.errors import ErrorCode

# -- member timers (§9.2) ------------------------------------------------------------------

_MEMBER_TIMEOUT = MemberTimeout()  # immutable and alike: one for every heartbeat


def schedule_heartbeat(core: Core, group: Group, member_id: str, now_ms: int, timeout_ms: int) -> None:
    """Arm (or re-arm: one timer per member) a member's heartbeat/session timer."""
    # heartbeat_key's tuple, made here: a member's timer is set twice a rebalance (issue 22)
    core.timers.schedule((TimerKind.HEARTBEAT, group.group_id, member_id), now_ms + timeout_ms, _MEMBER_TIMEOUT)


def cancel_heartbeat(core: Core, group: Group, member_id: str) -> None:
    core.timers.cancel(heartbeat_key(group.group_id, member_id))


# -- parked replies ------------------------------------------------------------------------


def complete_join_future(fx: Effects, member: Member, result: JoinGroupResult) -> None:
    if member.awaiting_join is not None:
        fx.reply(member.awaiting_join, result)
        member.park_join(None)


def complete_sync_future(fx: Effects, member: Member, result: SyncGroupResult) -> None:
    if member.awaiting_sync is not None:
        fx.reply(member.awaiting_sync, result)
        member.awaiting_sync = None


def leader_member_list(group: Group) -> tuple[JoinedMember, ...]:
    """``currentClassicGroupMembers``: every member in iteration order, with the selected metadata."""
    return tuple(
        JoinedMember(m.member_id, m.group_instance_id, m.metadata_for(group.protocol_name))
        for m in group.members.values()
    )


def join_result_for(group: Group, member_id: str) -> JoinGroupResult:
    """The success answer of a completed join: the leader alone gets the member list."""
    return JoinGroupResult(
        error=ErrorCode.NONE,
        member_id=member_id,
        generation_id=group.generation_id,
        protocol_type=group.protocol_type,
        protocol_name=group.protocol_name,
        leader=group.leader_id or "",
        members=leader_member_list(group) if group.is_leader(member_id) else (),
    )


# -- prepareRebalance (§4.3) ---------------------------------------------------------------


def prepare_rebalance(core: Core, fx: Effects, group: Group, now_ms: int, reason: str, code: str) -> None:
    if group.state is GroupState.COMPLETING_REBALANCE:
        _reset_and_propagate_error(fx, group, ErrorCode.REBALANCE_IN_PROGRESS)
    group.pending_sync.clear()
    core.timers.cancel(sync_key(group.group_id))
    initial = group.state is GroupState.EMPTY
    delay = core.config.initial_rebalance_delay_ms
    fx.record(RebalancePrepared(group.group_id, now_ms, reason, code, group.state.value, group.generation_id,
                                delay if initial else None))
    group.transition_to(GroupState.PREPARING_REBALANCE, now_ms)
    if initial:
        remaining = max(group.rebalance_timeout_ms() - delay, 0)
        core.timers.schedule(join_key(group.group_id), now_ms + delay, InitialDelay(delay, remaining))
        return
    if group.has_all_members_joined():
        complete_join(core, fx, group, now_ms)
    else:
        _schedule_join_timeout(core, group, now_ms)


def _schedule_join_timeout(core: Core, group: Group, now_ms: int) -> None:
    core.timers.schedule(join_key(group.group_id), now_ms + group.rebalance_timeout_ms(), RebalanceTimeout())


def _reset_and_propagate_error(fx: Effects, group: Group, error: ErrorCode) -> None:
    """Every assignment is reset and every parked SyncGroup gets ``error`` (null type/name)."""
    for member in group.members.values():
        member.assignment = b""
    for member in group.members.values():
        complete_sync_future(fx, member, SyncGroupResult(error))


def maybe_prepare_rebalance_or_complete_join(
    core: Core, fx: Effects, group: Group, now_ms: int, reason: str, code: str
) -> None:
    if group.state in CAN_REBALANCE:
        prepare_rebalance(core, fx, group, now_ms, reason, code)
    else:
        maybe_complete_join(core, fx, group, now_ms)


def in_initial_delay(core: Core, group: Group) -> bool:
    return isinstance(core.timers.payload(join_key(group.group_id)), InitialDelay)


def maybe_complete_join(core: Core, fx: Effects, group: Group, now_ms: int) -> None:
    """After a (re)join or a leave: complete only outside the initial delay (§5.5).

    Java tests ``previousState != Empty``; Scala's ``InitialDelayedJoin.tryComplete`` is
    always false. Both mean "not in the initial delay" on every reachable path.
    """
    if group.state is not GroupState.PREPARING_REBALANCE or not group.has_all_members_joined():
        return
    waiting = group.previous_state is GroupState.EMPTY if core.java else in_initial_delay(core, group)
    if not waiting or _waits_for_members(core, group):
        complete_join(core, fx, group, now_ms)


def complete_join_after_removal(core: Core, fx: Effects, group: Group, now_ms: int) -> None:
    """A member or pending member was removed by a timer while PreparingRebalance.

    Java completes at once when everyone left has joined, even during the initial delay;
    Scala waits for the delay timer (spec §15 #4).
    """
    if group.state is not GroupState.PREPARING_REBALANCE or not group.has_all_members_joined():
        return
    if core.java or not in_initial_delay(core, group) or _waits_for_members(core, group):
        complete_join(core, fx, group, now_ms)


def _waits_for_members(core: Core, group: Group) -> bool:
    """join_race "together": the zero delay has expired and only waited for the members handed an id."""
    timer = core.timers.payload(join_key(group.group_id))
    return isinstance(timer, InitialDelay) and timer.waits_for_members


# -- join completion (§5.5) ----------------------------------------------------------------


def complete_join(core: Core, fx: Effects, group: Group, now_ms: int) -> None:
    core.timers.cancel(join_key(group.group_id))
    _drop_dynamic_members_not_rejoined(core, fx, group, now_ms)
    if group.state is GroupState.DEAD:
        return
    if not _elect_joined_leader(group) and len(group.members) > 0:
        # Only static members that did not rejoin are left: wait another rebalance timeout
        # (GMMT testCompleteJoinPhaseNoMembersRejoinedExtendsJoinPhase).
        _schedule_join_timeout(core, group, now_ms)
        return
    _init_next_generation(fx, group, now_ms)
    if group.state is GroupState.EMPTY:
        fx.record(GroupEmpty(group.group_id, now_ms, group.generation_id))
        return
    # join_result_for's answers, their common fields read once (10,000 answers at once in a big group: issue 22)
    generation, protocol_type, protocol_name = group.generation_id, group.protocol_type, group.protocol_name
    leader = group.leader_id or ""
    # The leader's answer first: every member's SyncGroup answer waits for the leader's SyncGroup, which needs this
    # answer (its member list). The others follow in the members' order; the timers below keep that order (their
    # ties decide who expires first). Answers to different connections: the order is not on any one wire (issue
    # 22: in Java HashMap order the leader's answer left on average after half of 10,000 others).
    first = group.members.get(leader)
    if first is not None and first.awaiting_join is not None:
        complete_join_future(fx, first, JoinGroupResult(ErrorCode.NONE, leader, generation, protocol_type,
                                                        protocol_name, leader, False, leader_member_list(group)))
    for member in group.members.values():
        member_id = member.member_id
        if member.awaiting_join is not None:
            complete_join_future(fx, member, JoinGroupResult(
                ErrorCode.NONE, member_id, generation, protocol_type, protocol_name, leader, False,
                leader_member_list(group) if member_id == leader else ()))
        schedule_heartbeat(core, group, member_id, now_ms, member.session_timeout_ms)
        member.is_new = False
        group.pending_sync.add(member_id)
    # KAFKA-12890: members that never sync this generation are removed after a rebalance timeout.
    core.timers.schedule(sync_key(group.group_id), now_ms + group.rebalance_timeout_ms(),
                         PendingSync(group.generation_id))


def _drop_dynamic_members_not_rejoined(core: Core, fx: Effects, group: Group, now_ms: int) -> None:
    dropped = [
        m.member_id for m in group.members.values() if m.awaiting_join is None and m.group_instance_id is None
    ]
    for member_id in dropped:
        group.remove(member_id)
        cancel_heartbeat(core, group, member_id)
    if dropped:
        fx.record(MembersDroppedNotRejoined(group.group_id, now_ms, tuple(dropped), group.generation_id))


def _elect_joined_leader(group: Group) -> bool:
    """``maybeElectNewJoinedLeader``: keep a rejoined leader, else the first awaiting member."""
    leader = group.members.get(group.leader_id) if group.leader_id is not None else None
    if leader is not None and leader.awaiting_join is not None:
        return True
    first = next((m for m in group.members.values() if m.awaiting_join is not None), None)
    if first is None:
        return False
    group.leader_id = first.member_id
    return True


def _init_next_generation(fx: Effects, group: Group, now_ms: int) -> None:
    group.generation_id += 1
    group.pending_sync.clear()
    if len(group.members) == 0:
        group.protocol_name = None
        group.transition_to(GroupState.EMPTY, now_ms)
        return
    selection = select_protocol(group)
    group.protocol_name = selection.winner
    group.transition_to(GroupState.COMPLETING_REBALANCE, now_ms)
    members = group.members.values()
    fx.record(GenerationStarted(
        group.group_id, now_ms, group.generation_id, group.protocol_type, selection.candidates,
        selection.votes, selection.winner or "", group.leader_id or "",
        tuple((m.member_id, m.group_instance_id) for m in members),
        tuple(m.member_id for m in members if m.awaiting_join is None),
    ))


# -- timer bodies ---------------------------------------------------------------------------


def on_initial_delay(core: Core, fx: Effects, group: Group, now_ms: int, timer: InitialDelay) -> None:
    """``tryCompleteInitialRebalanceElseSchedule``: extend while new members keep arriving (§6.1)."""
    if _hold_for_members(core, group, timer):
        # join_race "together" (not Kafka: a deterministic outcome for tests): members that were handed an
        # id are still to join; wait for them at most the rest of the rebalance timeout (they complete it).
        core.timers.schedule(join_key(group.group_id), now_ms + timer.remaining_ms,
                             InitialDelay(0, 0, waits_for_members=True))
        return
    if group.new_member_added and timer.remaining_ms != 0:
        group.new_member_added = False
        delay = min(core.config.initial_rebalance_delay_ms, timer.remaining_ms)
        remaining = max(timer.remaining_ms - timer.delay_ms, 0)  # Kafka subtracts the previous delay
        core.timers.schedule(join_key(group.group_id), now_ms + delay, InitialDelay(delay, remaining))
        fx.record(InitialDelayExtended(group.group_id, now_ms, group.generation_id, delay, remaining))
        return
    complete_join(core, fx, group, now_ms)


def _hold_for_members(core: Core, group: Group, timer: InitialDelay) -> bool:
    return (core.config.join_race == TOGETHER and timer.delay_ms == 0 and timer.remaining_ms > 0
            and bool(group.pending_join))
