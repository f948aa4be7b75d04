"""JoinGroup basics and rebalance triggers (spec §18.1, §18.3; traps §16.1-3, §16.10)."""

from __future__ import annotations

from rebalance_lab.coordinator.classic.messages import JoinedMember, LeaveMember
from rebalance_lab.coordinator.classic.records import RebalancePrepared
from rebalance_lab.protocol.errors import ErrorCode

from .group_context import GroupContext, protocols

E = ErrorCode


def test_new_group_v4_join_needs_member_id_then_completes_after_the_initial_delay() -> None:  # 18.1 #1
    ctx = GroupContext()
    first = ctx.join(version=4)
    assert first.error is E.MEMBER_ID_REQUIRED
    member_id = first.result.member_id
    assert member_id.startswith("client-") and len(member_id) == len("client-") + 36
    assert first.result.generation_id == -1 and first.result.members == ()
    assert ctx.state() == "Empty"
    assert ctx.list_groups().groups[0].protocol_type == ""
    second = ctx.join(member_id, version=4)
    ctx.sleep(1500)
    assert not second.done
    ctx.sleep(1501)
    r = second.result
    assert (r.error, r.generation_id, r.leader, r.protocol_name, r.protocol_type) == (
        E.NONE, 1, member_id, "range", "consumer")
    assert r.members == (JoinedMember(member_id, None, b"meta"),)
    assert ctx.state() == "CompletingRebalance"


def test_unknown_member_id_on_a_new_group_is_rejected_without_creating_it() -> None:  # 18.1 #2
    ctx = GroupContext()
    assert ctx.join("member-id").error is E.UNKNOWN_MEMBER_ID
    assert ctx.join("member-id", instance="group-instance-id").error is E.UNKNOWN_MEMBER_ID
    assert ctx.describe().state == "Dead"
    assert ctx.coordinator.group("g") is None


def test_empty_protocol_type_is_rejected_even_for_the_first_member() -> None:  # 18.1 #3, trap 1
    ctx = GroupContext()
    assert ctx.join(protocol_type="").error is E.INCONSISTENT_GROUP_PROTOCOL
    assert ctx.join(protocol_type="", instance="i").error is E.INCONSISTENT_GROUP_PROTOCOL


def test_empty_protocol_list_is_rejected() -> None:  # 18.1 #4, trap 1
    ctx = GroupContext()
    assert ctx.join(names=()).error is E.INCONSISTENT_GROUP_PROTOCOL


def test_a_different_protocol_type_is_rejected_at_once() -> None:  # 18.1 #5
    ctx = GroupContext()
    ctx.completing_group(1)
    assert ctx.join(protocol_type="connect", version=3).error is E.INCONSISTENT_GROUP_PROTOCOL


def test_a_member_without_a_common_protocol_is_rejected_while_the_group_forms() -> None:  # 18.1 #6
    ctx = GroupContext()
    a = ctx.join(version=3, names=("range",))
    b = ctx.join(version=3, names=("roundrobin",))
    assert b.error is E.INCONSISTENT_GROUP_PROTOCOL
    ctx.sleep(3000)
    assert a.error is E.NONE


def test_second_v4_join_with_an_empty_protocol_list_is_inconsistent() -> None:  # 18.1 #7
    ctx = GroupContext()
    member_id = ctx.join(version=4).result.member_id
    assert ctx.join(member_id, version=4, names=()).error is E.INCONSISTENT_GROUP_PROTOCOL
    ok = ctx.join(member_id, version=4)
    ctx.sleep(3000)
    assert ok.error is E.NONE


def test_session_timeout_bounds_are_inclusive_and_a_rejected_join_creates_no_group() -> None:  # 18.1 #8
    ctx = GroupContext(min_session_ms=6000, max_session_ms=1_800_000)
    assert ctx.join(session_ms=5999).error is E.INVALID_SESSION_TIMEOUT
    assert ctx.join(session_ms=1_800_001).error is E.INVALID_SESSION_TIMEOUT
    assert ctx.coordinator.group("g") is None
    assert ctx.join(session_ms=6000).error is E.MEMBER_ID_REQUIRED
    assert ctx.join(session_ms=1_800_000).error is E.MEMBER_ID_REQUIRED


def test_empty_group_id_is_invalid_for_join_sync_heartbeat_and_leave() -> None:  # 18.1 #9
    ctx = GroupContext()
    assert ctx.join(group="").error is E.INVALID_GROUP_ID
    assert ctx.sync("m", 1, group="").error is E.INVALID_GROUP_ID
    assert ctx.heartbeat("m", 1, group="") is E.INVALID_GROUP_ID
    assert ctx.leave(group="").error is E.INVALID_GROUP_ID
    assert ctx.describe("").state == "Dead"
    assert ctx.delete("") == {"": E.GROUP_ID_NOT_FOUND}


def test_unknown_member_joining_an_existing_group_is_rejected() -> None:  # 18.1 #10
    ctx = GroupContext()
    ctx.completing_group(1)
    assert ctx.join("other-member-id").error is E.UNKNOWN_MEMBER_ID


def test_existing_member_joining_an_empty_group_gets_unknown_member_id() -> None:  # 18.1 #11
    ctx = GroupContext()
    [m] = ctx.stable_group(1)
    ctx.leave(LeaveMember(m))
    assert ctx.state() == "Empty"
    r = ctx.join(m).result
    assert (r.error, r.generation_id, r.member_id) == (E.UNKNOWN_MEMBER_ID, -1, m)


def test_join_from_unchanged_leader_in_stable_rebalances_at_once() -> None:  # 18.3 #15, trap 3
    ctx = GroupContext()
    [leader] = ctx.stable_group(1)
    r = ctx.join(leader).result
    assert (r.error, r.generation_id) == (E.NONE, 2)
    assert ctx.state() == "CompletingRebalance"
    assert ctx.records_of(RebalancePrepared)[-1].reason_code == "leader_rejoin"


def test_join_from_unchanged_follower_does_not_rebalance() -> None:  # 18.3 #16, trap 3
    ctx = GroupContext()
    leader, follower = ctx.stable_group(2)
    r = ctx.join(follower).result
    assert (r.error, r.generation_id, r.members, r.leader) == (E.NONE, 1, (), leader)
    assert ctx.state() == "Stable"


def test_follower_with_changed_metadata_triggers_a_rebalance_in_stable() -> None:  # 18.3 #17
    ctx = GroupContext()
    leader, follower = ctx.stable_group(2)
    f = ctx.join(follower, names=("range", "roundrobin"))
    assert not f.done and ctx.state() == "PreparingRebalance"
    lead = ctx.join(leader)
    assert f.result.generation_id == 2 and lead.result.generation_id == 2
    assert f.error is E.NONE and lead.error is E.NONE


def test_rejoin_with_same_metadata_in_completing_rebalance_returns_current_generation() -> None:  # 18.3 #18
    ctx = GroupContext()
    leader, follower = ctx.completing_group(2)
    r = ctx.join(leader).result
    assert (r.error, r.generation_id, r.leader) == (E.NONE, 1, leader)
    assert {m.member_id for m in r.members} == {leader, follower}
    assert ctx.join(follower).result.members == ()
    assert ctx.state() == "CompletingRebalance"
    assert ctx.sync(leader, 1, assignments={}).error is E.NONE
    assert ctx.state() == "Stable"


def test_metadata_change_in_completing_rebalance_rebalances_at_once() -> None:  # 18.3 #19
    ctx = GroupContext()
    [m] = ctx.completing_group(1)
    r = ctx.join(m, names=("range", "roundrobin")).result
    assert (r.error, r.generation_id) == (E.NONE, 2)


def test_single_member_switching_its_protocol_completely_is_inconsistent() -> None:  # 18.3 #20, trap 2
    ctx = GroupContext()
    [m] = ctx.stable_group(1)
    assert ctx.join(m, names=("roundrobin",)).error is E.INCONSISTENT_GROUP_PROTOCOL


def test_dynamic_member_that_does_not_rejoin_is_dropped_at_join_completion() -> None:  # 18.3 #21
    ctx = GroupContext()
    [leader] = ctx.completing_group(1, session_ms=1000, rebalance_ms=1000)
    m = ctx.join(version=3, session_ms=1000, rebalance_ms=1000)
    assert ctx.state() == "PreparingRebalance"
    ctx.sleep(1000)
    r = m.result
    assert (r.error, r.generation_id, r.leader) == (E.NONE, 2, r.member_id)
    assert ctx.view().member_ids == (r.member_id,)
    assert leader not in ctx.view().member_ids


def test_new_member_in_completing_rebalance_cancels_parked_syncs() -> None:  # 18.3 #22
    ctx = GroupContext()
    _leader, follower = ctx.completing_group(2)
    parked = ctx.sync(follower, 1)
    assert not parked.done
    ctx.join(version=3)
    r = parked.result
    assert (r.error, r.assignment, r.protocol_type, r.protocol_name) == (E.REBALANCE_IN_PROGRESS, b"", None, None)


def test_duplicate_join_orphans_the_first_parked_request() -> None:  # trap 10
    ctx = GroupContext()
    leader, follower = ctx.stable_group(2)
    first = ctx.join(follower, names=("range", "roundrobin"))
    second = ctx.join(follower, names=("range", "roundrobin"))
    ctx.join(leader)
    assert second.result.generation_id == 2
    assert not first.done


def test_dynamic_member_ids_use_the_client_id_and_static_ones_the_instance_id() -> None:  # §3.6
    ctx = GroupContext()
    dyn = ctx.join(version=4, client_id="my-client").result.member_id
    stat = ctx.join(version=5, instance="inst-1", client_id="my-client")
    ctx.sleep(3000)
    assert dyn.startswith("my-client-")
    assert stat.result.member_id.startswith("inst-1-")


def test_pending_member_with_an_instance_id_is_an_unknown_server_error() -> None:  # §5.1 11.3
    ctx = GroupContext()
    pending = ctx.join(version=4).result.member_id
    assert ctx.join(pending, instance="i").error is E.UNKNOWN_SERVER_ERROR


def test_member_joining_with_an_identical_protocol_but_new_metadata_counts_as_changed() -> None:
    ctx = GroupContext()
    _leader, follower = ctx.stable_group(2)
    f = ctx.join(follower, protos=protocols("range", metadata=b"new"))
    assert not f.done and ctx.state() == "PreparingRebalance"


def test_a_completed_join_answers_the_leader_first_whatever_the_members_order() -> None:
    """Every SyncGroup answer waits for the leader's SyncGroup, which needs the leader's JoinGroup answer: it is
    resolved (and written by the shell) before the followers', who keep the members' order (issue 22)."""
    ctx = GroupContext()
    ids = ctx.stable_group(8)
    leader = ctx.view().leader_id
    order = list(ctx.view().member_ids)
    assert order[0] != leader  # the members' own order (Java HashMap order) puts another member first
    lead = ctx.join(leader)
    followers = {ctx.join(m).token: m for m in order if m != leader}
    answered = [token for token in ctx.replies if token == lead.token or token in followers]
    assert answered[0] == lead.token and lead.result.members
    assert [followers[t] for t in answered[1:]] == [m for m in order if m != leader]
    assert set(ids) == set(order)
