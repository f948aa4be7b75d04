"""The state table (STYLE.md principle 6) and the records' event rows (replay-inputs §7.1)."""

from __future__ import annotations

import json

import pytest

from rebalance_lab.config import Flavor
from rebalance_lab.coordinator.classic.messages import LeaveMember
from rebalance_lab.coordinator.classic.model import Group
from rebalance_lab.coordinator.classic.records import (
    GenerationSnapshot,
    GenerationStarted,
    MemberJoined,
    MemberLeft,
    RebalancePrepared,
)
from rebalance_lab.coordinator.classic.state import GroupState, IllegalStateTransition

from .group_context import GroupContext

S = GroupState


@pytest.mark.parametrize(
    ("source", "target"),
    [(S.EMPTY, S.STABLE), (S.EMPTY, S.COMPLETING_REBALANCE), (S.STABLE, S.EMPTY),
     (S.COMPLETING_REBALANCE, S.EMPTY), (S.PREPARING_REBALANCE, S.STABLE), (S.DEAD, S.EMPTY)],
)
def test_illegal_transition_raises_and_changes_nothing(source: GroupState, target: GroupState) -> None:
    group = Group("g", Flavor.KAFKA_4, 0)
    group.state = source
    with pytest.raises(IllegalStateTransition):
        group.transition_to(target, 5)
    assert (group.state, group.previous_state, group.state_timestamp_ms) == (source, S.DEAD, 0)


def test_every_state_may_become_dead() -> None:
    for state in GroupState:
        state.check_transition_to(S.DEAD)


def test_new_group_starts_empty_with_dead_as_previous_state() -> None:
    ctx = GroupContext()
    ctx.join(version=4)
    view = ctx.view()
    assert (view.state, view.previous_state, view.generation_id) == ("Empty", "Dead", 0)


def test_completing_a_join_into_an_empty_group_still_increments_the_generation() -> None:  # trap 15
    ctx = GroupContext()
    [m] = ctx.stable_group(1)
    ctx.leave(LeaveMember(m))
    assert ctx.view().generation_id == 2 and ctx.view().protocol_name is None


def test_records_tell_the_whole_story_of_a_generation() -> None:
    ctx = GroupContext()
    leader, _follower = ctx.stable_group(2)
    kinds = [type(r).__name__ for r in ctx.records]
    # the second member joined during the initial delay, so the delay was extended once (issue 19 records it)
    assert kinds == ["GroupCreated", "MemberJoined", "RebalancePrepared", "MemberJoined", "InitialDelayExtended",
                     "GenerationStarted", "AssignmentStored", "GenerationSnapshot"]
    joined = ctx.records_of(MemberJoined)[0]
    assert (joined.member_id, joined.client_id, joined.protocols, joined.became_leader) == (
        leader, "client", (("range", b"meta"),), True)
    prepared = ctx.records_of(RebalancePrepared)[0]
    assert prepared.reason == f"Adding new member {leader} with group instance id null; client reason: not provided"
    assert prepared.reason_code == "member_join" and prepared.initial_delay_ms == 3000


def test_every_record_converts_to_a_canonical_event_row() -> None:
    ctx = GroupContext()
    _leader, follower = ctx.stable_group(2)
    ctx.leave(LeaveMember(follower, reason="the consumer is being closed"))
    rows = [r.to_event(seq=i) for i, r in enumerate(ctx.records)]
    for row in rows:
        assert row["schema_version"] == "rbl-event/1" and row["source"] == "emulator"
        assert row["group_id"] == "g" and row["group_kind"] == "classic" and row["event_type"]
        json.dumps(row)  # JSON-serialisable (raw bytes stay on the record, not in the row)
    types = [row["event_type"] for row in rows]
    assert types[:8] == ["GROUP_EMPTY", "MEMBER_JOINED", "REBALANCE_PREPARE", "MEMBER_JOINED",
                         "REBALANCE_DELAY_EXTENDED", "JOIN_COMPLETE", "SYNC_LEADER_ASSIGNMENT", "GENERATION_SNAPSHOT"]
    assert "MEMBER_LEFT" in types
    snapshot = next(r for r in ctx.records if isinstance(r, GenerationSnapshot)).to_event()
    assert [m["member_id"] for m in snapshot["members"]] == list(ctx.records_of(GenerationStarted)[0].votes[i][0]
                                                                  for i in range(2))
    left = ctx.records_of(MemberLeft)[-1]
    assert left.member_id == follower
    last_prepare = ctx.records_of(RebalancePrepared)[-1]
    assert last_prepare.reason == f"explicit `LeaveGroup` request for ({follower}) members."


def test_scala_leave_reason_names_the_member_and_the_client_reason() -> None:
    ctx = GroupContext(Flavor.KAFKA_3)
    _leader, follower = ctx.stable_group(2)
    ctx.leave(LeaveMember(follower, reason="the consumer is being closed"))
    expected = f"Removing member {follower} on LeaveGroup; client reason: the consumer is being closed"
    assert ctx.records_of(RebalancePrepared)[-1].reason == expected
