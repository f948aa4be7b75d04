"""group.max.size (spec §18.7; trap §16.16) and LeaveGroup (spec §10, §18.8)."""

from __future__ import annotations

from rebalance_lab.coordinator.classic.messages import LeaveMember, ProtocolEntry
from rebalance_lab.coordinator.classic.model import Group, Member
from rebalance_lab.coordinator.classic.rebalance import prepare_rebalance
from rebalance_lab.coordinator.classic.state import GroupState
from rebalance_lab.coordinator.effects import Effects
from rebalance_lab.protocol.errors import ErrorCode

from .group_context import GroupContext

E = ErrorCode


def test_v3_join_beyond_max_size_is_rejected_at_once() -> None:  # 18.7 #53
    ctx = GroupContext(max_size=10)
    calls = [ctx.join(version=3) for _ in range(10)]
    assert not any(c.done for c in calls)
    assert ctx.join(version=3).error is E.GROUP_MAX_SIZE_REACHED


def test_v4_joins_beyond_max_size_are_rejected_in_the_second_round() -> None:  # 18.7 #54
    ctx = GroupContext(max_size=10, delay_ms=50)
    ids = [ctx.join(version=4).result.member_id for _ in range(11)]
    assert ctx.state() == "Empty"
    second = [ctx.join(m, version=4) for m in ids]
    assert [c.done for c in second] == [False] * 10 + [True]
    assert second[10].result.error is E.GROUP_MAX_SIZE_REACHED and second[10].result.member_id == ""
    ctx.sleep(50)
    assert not second[0].done
    ctx.sleep(50)
    assert all(c.error is E.NONE for c in second[:10])
    assert len(ctx.view().members) == 10
    assert ctx.join(ids[10], version=4).error is E.GROUP_MAX_SIZE_REACHED


def test_last_members_rejoining_an_over_capacity_group_are_kicked_out() -> None:  # 18.7 #55, trap 16
    ctx = GroupContext(max_size=10, delay_ms=50)
    core = ctx.coordinator._core
    group = Group("g", core.flavor, 0)
    ids = [f"m-{i:02d}" for i in range(12)]
    for member_id in ids:
        group.add(Member(member_id, None, "client", "/127.0.0.1", 10_000, 5000, "consumer",
                         (ProtocolEntry("range", b""),)))
    core.groups["g"] = group
    prepare_rebalance(core, Effects(), group, 0, "over capacity", "over_capacity")
    calls = [ctx.join(m) for m in ids]
    assert [c.done for c in calls] == [False] * 10 + [True, True]
    assert all(c.error is E.GROUP_MAX_SIZE_REACHED for c in calls[10:])
    assert len(ctx.view().members) == 10
    ctx.sleep(50)
    assert all(c.error is E.NONE and c.result.generation_id == 1 for c in calls[:10])
    assert set(ctx.view().member_ids) == set(ids[:10])


def test_leave_from_an_unknown_group_answers_each_member_unknown() -> None:  # 18.8 #56
    ctx = GroupContext()
    r = ctx.leave(LeaveMember("m"), group="unknown")
    assert r.error is E.NONE and [m.error for m in r.members] == [E.UNKNOWN_MEMBER_ID]


def test_leave_matrix() -> None:  # 18.8 #56
    ctx = GroupContext()
    [m] = ctx.stable_group(1)
    assert ctx.leave(LeaveMember("other")).members[0].error is E.UNKNOWN_MEMBER_ID
    r = ctx.leave(LeaveMember(m))
    assert (r.error, r.members[0].error) == (E.NONE, E.NONE)
    view = ctx.view()
    assert (view.state, view.generation_id) == ("Empty", 2)


def test_leave_from_a_dead_group_is_coordinator_not_available() -> None:  # 18.8 #56
    ctx = GroupContext()
    ctx.stable_group(1)
    ctx.coordinator._core.groups["g"].state = GroupState.DEAD
    r = ctx.leave(LeaveMember("x"))
    assert (r.error, r.members) == (E.COORDINATOR_NOT_AVAILABLE, ())


def test_static_leave_with_wrong_member_id_is_fenced_and_with_empty_id_succeeds() -> None:  # 18.8 #56
    ctx = GroupContext()
    ctx.stable_group(1, static=True)
    assert ctx.leave(LeaveMember("other-member-id", "instance-0")).members[0].error is E.FENCED_INSTANCE_ID
    r = ctx.leave(LeaveMember("", "instance-0")).members[0]
    assert (r.error, r.member_id, r.group_instance_id) == (E.NONE, "", "instance-0")
    assert ctx.view().members == ()


def test_batch_leave_of_static_members() -> None:  # 18.8 #57
    ctx = GroupContext()
    ctx.stable_group(2, static=True)
    r = ctx.leave(LeaveMember("", "instance-0"), LeaveMember("", "instance-1"))
    assert [m.error for m in r.members] == [E.NONE, E.NONE]


def test_batch_leave_with_a_fenced_instance() -> None:  # 18.8 #57
    ctx = GroupContext()
    ctx.stable_group(2, static=True)
    r = ctx.leave(LeaveMember("", "instance-0"), LeaveMember("invalid-member-id", "instance-1"))
    assert [m.error for m in r.members] == [E.NONE, E.FENCED_INSTANCE_ID]


def test_batch_leave_with_an_unknown_instance() -> None:  # 18.8 #57
    ctx = GroupContext()
    ctx.stable_group(2, static=True)
    r = ctx.leave(LeaveMember("", "unknown-instance-id"), LeaveMember("", "instance-1"))
    assert [m.error for m in r.members] == [E.UNKNOWN_MEMBER_ID, E.NONE]


def test_batch_leave_of_joined_and_pending_members_with_an_unknown_one() -> None:  # 18.8 #57
    ctx = GroupContext()
    leader, follower = ctx.stable_group(2)
    pending = ctx.join(version=4).result.member_id
    r = ctx.leave(LeaveMember(leader), LeaveMember(follower), LeaveMember(pending),
                  LeaveMember("unknown-member-id"))
    assert [m.error for m in r.members] == [E.NONE, E.NONE, E.NONE, E.UNKNOWN_MEMBER_ID]
    assert ctx.view().pending_members == () and ctx.state() == "Empty"


def test_pending_member_leaving_lets_the_rebalance_complete() -> None:  # 18.8 #58
    ctx = GroupContext()
    leader, follower = ctx.stable_group(2)
    lead = ctx.join(leader)
    pending = ctx.join(version=4).result.member_id
    f = ctx.join(follower)
    assert not f.done
    assert ctx.leave(LeaveMember(pending)).members[0].error is E.NONE
    assert lead.error is E.NONE and f.error is E.NONE
    assert ctx.state() == "CompletingRebalance" and len(ctx.view().members) == 2


def test_leaving_member_with_a_parked_join_gets_unknown_member() -> None:  # §10 rule 4
    ctx = GroupContext()
    _leader, follower = ctx.stable_group(2)
    parked = ctx.join(follower, names=("range", "roundrobin"))
    ctx.leave(LeaveMember(follower))
    assert parked.error is E.UNKNOWN_MEMBER_ID


def test_empty_member_list_leave_is_a_no_op() -> None:  # §10 rule 8
    ctx = GroupContext()
    ctx.stable_group(1)
    assert ctx.leave().members == ()
    assert ctx.state() == "Stable"
