"""Static membership, KIP-345 and KIP-814 (spec §5.4, §18.6; traps §16.4-6)."""

from __future__ import annotations

from rebalance_lab.coordinator.classic.messages import LeaveMember
from rebalance_lab.coordinator.classic.records import StaticMemberReplaced
from rebalance_lab.protocol.errors import ErrorCode

from .group_context import GroupContext, protocols

E = ErrorCode


def test_duplicate_static_join_while_forming_fences_the_first_request() -> None:  # 18.6 #42
    ctx = GroupContext()
    first = ctx.join(version=5, instance="group-instance-id")
    x1 = ctx.view().member_ids[0]
    second = ctx.join(version=5, instance="group-instance-id")
    r = first.result
    assert (r.error, r.member_id, r.generation_id, r.leader) == (E.FENCED_INSTANCE_ID, x1, -1, "")
    assert not second.done
    ctx.sleep(3000)
    assert second.error is E.NONE
    assert len(ctx.view().members) == 1 and second.result.member_id != x1


def test_wrong_member_id_for_a_known_instance_is_fenced() -> None:  # 18.6 #43
    ctx = GroupContext()
    ctx.completing_group(1, static=True)
    assert ctx.join("unknown-member-id", instance="instance-0").error is E.FENCED_INSTANCE_ID


def test_known_member_id_with_an_unknown_instance_is_unknown_member() -> None:  # 18.6 #44
    ctx = GroupContext()
    [m] = ctx.completing_group(1, static=True)
    assert ctx.join(m, instance="unknown-instance").error is E.UNKNOWN_MEMBER_ID


def _static_pair(ctx: GroupContext) -> tuple[str, str, str]:
    leader, follower = ctx.stable_group(2, static=True)
    instance = ctx.view().member(leader).group_instance_id  # type: ignore[union-attr]
    assert instance is not None
    return leader, follower, instance


def test_static_leader_restarting_in_stable_on_v9_skips_assignment_without_rebalance() -> None:  # #45, trap 4
    ctx = GroupContext()
    old, follower, inst = _static_pair(ctx)
    r = ctx.join(version=9, instance=inst).result
    assert (r.error, r.generation_id, r.skip_assignment) == (E.NONE, 1, True)
    assert r.member_id != old and r.leader == r.member_id
    assert {(m.member_id, m.group_instance_id) for m in r.members} == {
        (r.member_id, inst), (follower, ctx.view().member(follower).group_instance_id)}  # type: ignore[union-attr]
    assert ctx.state() == "Stable"
    assert ctx.join(old, instance=inst).error is E.FENCED_INSTANCE_ID
    assert ctx.sync(old, 1, instance=inst).error is E.FENCED_INSTANCE_ID
    assert ctx.sync(old, 1).error is E.UNKNOWN_MEMBER_ID
    assert ctx.records_of(StaticMemberReplaced)[-1].old_member_id == old


def test_static_leader_restarting_in_stable_before_v9_sees_the_old_leader_id() -> None:  # #46, trap 4
    ctx = GroupContext()
    old, _follower, inst = _static_pair(ctx)
    r = ctx.join(version=8, instance=inst).result
    assert (r.error, r.generation_id, r.leader, r.members, r.skip_assignment) == (E.NONE, 1, old, (), False)
    assert r.member_id != old
    assert ctx.state() == "Stable" and ctx.view().leader_id == r.member_id


def test_static_rejoin_with_new_subscription_but_same_protocol_does_not_rebalance() -> None:  # trap 5
    ctx = GroupContext()
    [m] = ctx.stable_group(1, static=True)
    r = ctx.join(version=9, instance="instance-0", protos=protocols("range", metadata=b"new-topics")).result
    assert (r.error, r.generation_id) == (E.NONE, 1)
    assert ctx.state() == "Stable"
    assert ctx.view().members[0].assignment == m.encode()  # the assignment is carried over


def test_static_rejoin_that_changes_the_selected_protocol_rebalances() -> None:  # 18.6 #47
    ctx = GroupContext()
    ctx.stable_group(1, static=True, names=("range", "roundrobin"))
    assert ctx.view().protocol_name == "range"
    r = ctx.join(version=9, instance="instance-0", names=("roundrobin",)).result
    assert (r.error, r.generation_id, r.protocol_name) == (E.NONE, 2, "roundrobin")
    assert ctx.state() == "CompletingRebalance"


def test_static_replacement_during_completing_rebalance_rebalances() -> None:  # 18.6 #48
    ctx = GroupContext()
    ctx.completing_group(1, static=True)
    r = ctx.join(version=9, instance="instance-0").result
    assert (r.error, r.generation_id) == (E.NONE, 2)
    assert ctx.state() == "CompletingRebalance"


def test_static_follower_that_does_not_rejoin_stays_in_the_group() -> None:  # 18.6 #49, trap 6
    ctx = GroupContext()
    leader, follower = ctx.stable_group(2, static=True, rebalance_ms=10_000, session_ms=15_000)
    n = ctx.join(version=5, instance="new", rebalance_ms=10_000, session_ms=15_000)
    lead = ctx.join(leader, instance="instance-0", rebalance_ms=10_000, session_ms=15_000)
    ctx.sleep(9999)
    assert not lead.done
    ctx.sleep(1)
    assert lead.result.generation_id == 2 and len(lead.result.members) == 3
    assert follower in {m.member_id for m in lead.result.members}
    assert n.result.members == () and n.result.leader == leader


def test_static_leader_that_does_not_rejoin_hands_leadership_to_the_first_awaiting_member() -> None:  # #50
    ctx = GroupContext()
    leader, follower = ctx.stable_group(2, static=True, rebalance_ms=10_000, session_ms=15_000)
    n = ctx.join(version=5, instance="new", rebalance_ms=10_000, session_ms=15_000)
    f = ctx.join(follower, instance="instance-1", rebalance_ms=10_000, session_ms=15_000)
    ctx.sleep(10_000)
    new_leader = f.result.leader
    assert new_leader in (follower, n.result.member_id)
    awaiting_first = next(m for m in ctx.view().member_ids if m != leader)
    assert new_leader == awaiting_first
    leader_reply = f.result if new_leader == follower else n.result
    assert len(leader_reply.members) == 3


def test_group_is_stuck_in_preparing_rebalance_by_static_members_that_do_not_rejoin() -> None:  # #51, trap 6
    ctx = GroupContext()
    leader, follower = ctx.stable_group(2, static=True, rebalance_ms=5000, session_ms=10_000)
    d = ctx.join(version=3, rebalance_ms=5000, session_ms=10_000)
    ctx.sleep(5000)
    dyn = d.result.member_id
    assert (d.result.leader, d.result.generation_id, len(d.result.members)) == (dyn, 2, 3)
    result = ctx.leave(LeaveMember(follower, "instance-1"))
    assert result.members[0].error is E.NONE and ctx.state() == "PreparingRebalance"
    ctx.sleep(5000)
    view = ctx.view()
    assert view.member_ids == (leader,)
    assert (view.state, view.generation_id) == ("PreparingRebalance", 2)


def test_static_member_outlives_a_rebalance_then_times_out_on_the_old_generation() -> None:  # #52, trap 17
    ctx = GroupContext()
    [a] = ctx.stable_group(1, static=True, rebalance_ms=10_000, session_ms=5000)
    b = ctx.join(version=3, rebalance_ms=10_000, session_ms=2500)
    ctx.sleep(2500)
    assert ctx.heartbeat(a, 1) is E.REBALANCE_IN_PROGRESS
    ctx.sleep(2500)
    assert ctx.heartbeat(a, 1) is E.REBALANCE_IN_PROGRESS
    ctx.sleep(5000)  # t = 10000: the join timer fires; A is static, so it is kept
    bid = b.result.member_id
    assert (b.result.leader, b.result.generation_id, len(b.result.members)) == (bid, 2, 2)
    assert ctx.sync(bid, 2, assignments={}).error is E.NONE
    assert ctx.heartbeat(a, 1) is E.ILLEGAL_GENERATION
    for _ in range(2):
        ctx.sleep(2000)
        assert ctx.heartbeat(bid, 2) is E.NONE
    ctx.sleep(1000)  # t = 15000: A's session timer (armed at join completion) expires
    assert a not in ctx.view().member_ids
    assert ctx.heartbeat(bid, 2) is E.REBALANCE_IN_PROGRESS
    r = ctx.join(bid, session_ms=2500, rebalance_ms=10_000).result
    assert (r.error, r.generation_id) == (E.NONE, 3)
