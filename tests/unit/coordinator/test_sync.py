"""SyncGroup and the pending-sync timeout (spec §8, §18.4; trap §16.11)."""

from __future__ import annotations

from rebalance_lab.coordinator.classic.records import AssignmentStored, GenerationSnapshot
from rebalance_lab.protocol.errors import ErrorCode

from .group_context import GroupContext

E = ErrorCode


def test_follower_syncing_before_the_leader_gets_its_assignment_when_the_leader_syncs() -> None:  # 18.4 #23
    ctx = GroupContext()
    leader, follower = ctx.completing_group(2)
    f = ctx.sync(follower, 1)
    assert not f.done
    lead = ctx.sync(leader, 1, assignments={leader: b"\x00", follower: b"\x01"})
    assert (lead.error, lead.result.assignment) == (E.NONE, b"\x00")
    assert (f.error, f.result.assignment) == (E.NONE, b"\x01")
    assert f.result.protocol_type == "consumer" and f.result.protocol_name == "range"
    assert ctx.state() == "Stable"


def test_follower_syncing_after_the_leader_gets_its_assignment_at_once() -> None:  # 18.4 #24
    ctx = GroupContext()
    leader, follower = ctx.completing_group(2)
    ctx.sync(leader, 1, assignments={leader: b"\x00", follower: b"\x01"})
    f = ctx.sync(follower, 1)
    assert (f.error, f.result.assignment) == (E.NONE, b"\x01")


def test_member_missing_from_the_leader_assignment_gets_empty_bytes() -> None:  # 18.4 #25, trap 11
    ctx = GroupContext()
    leader, follower = ctx.completing_group(2)
    f = ctx.sync(follower, 1)
    ctx.sync(leader, 1, assignments={leader: b"\x00", "not-a-member": b"\x07"})
    assert (f.error, f.result.assignment) == (E.NONE, b"")
    stored = ctx.records_of(AssignmentStored)[-1]
    assert stored.missing == (follower,)


def test_sync_with_a_wrong_generation_is_illegal() -> None:  # 18.4 #26
    ctx = GroupContext()
    [m] = ctx.completing_group(1)
    assert ctx.sync(m, 2).error is E.ILLEGAL_GENERATION


def test_sync_from_unknown_member_or_group_is_unknown_member() -> None:  # 18.4 #27
    ctx = GroupContext()
    ctx.completing_group(1)
    r = ctx.sync("unknown-member-id", 1).result
    assert (r.error, r.assignment) == (E.UNKNOWN_MEMBER_ID, b"")
    assert ctx.sync("m", 1, group="nope").error is E.UNKNOWN_MEMBER_ID


def test_sync_checks_protocol_type_and_name_when_given() -> None:  # 18.4 #28
    ctx = GroupContext()
    leader, follower = ctx.completing_group(2)
    assert ctx.sync(leader, 1, protocol_type="protocolType").error is E.INCONSISTENT_GROUP_PROTOCOL
    assert ctx.sync(follower, 1, protocol_name="protocolName").error is E.INCONSISTENT_GROUP_PROTOCOL
    lead = ctx.sync(leader, 1, protocol_type="consumer", protocol_name="range", assignments={})
    assert lead.error is E.NONE
    plain = ctx.sync(follower, 1).result
    assert (plain.error, plain.protocol_type, plain.protocol_name) == (E.NONE, "consumer", "range")


def test_sync_during_preparing_rebalance_is_rebalance_in_progress() -> None:  # 18.4 #29
    ctx = GroupContext()
    leader, follower = ctx.stable_group(2)
    ctx.join(leader)
    assert ctx.sync(follower, 1).error is E.REBALANCE_IN_PROGRESS


def test_leader_that_never_syncs_expires_and_the_parked_follower_gets_rebalance_in_progress() -> None:  # #30
    ctx = GroupContext()
    _leader, follower = ctx.completing_group(2, rebalance_ms=10_000, session_ms=5000)
    f = ctx.sync(follower, 1)
    ctx.sleep(4999)
    assert not f.done
    ctx.sleep(1)
    assert f.error is E.REBALANCE_IN_PROGRESS
    view = ctx.view()
    assert view.state == "PreparingRebalance" and view.member_ids == (follower,)
    ctx.sleep(5000)  # the old pending-sync timer (due at +10000) was cancelled by the rebalance
    assert ctx.view().member_ids == (follower,)


def test_nobody_syncing_removes_everyone_at_the_pending_sync_timeout() -> None:  # 18.4 #31
    ctx = GroupContext()
    ids = ctx.completing_group(3, rebalance_ms=5000, session_ms=5000)
    ctx.sleep(2500)
    assert all(ctx.heartbeat(m, 1) is E.NONE for m in ids)
    ctx.sleep(2500)
    view = ctx.view()
    assert (view.state, view.generation_id, view.members) == ("Empty", 2, ())
    assert all(ctx.heartbeat(m, 1) is E.UNKNOWN_MEMBER_ID for m in ids)


def test_followers_not_syncing_are_removed_at_the_pending_sync_timeout() -> None:  # 18.4 #32
    ctx = GroupContext()
    leader, *followers = ctx.completing_group(3, rebalance_ms=5000, session_ms=5000)
    assert ctx.sync(leader, 1, assignments={}).error is E.NONE
    ctx.sleep(2500)
    assert all(ctx.heartbeat(m, 1) is E.NONE for m in [leader, *followers])
    ctx.sleep(2500)
    assert ctx.state() == "PreparingRebalance"
    assert ctx.heartbeat(leader, 1) is E.REBALANCE_IN_PROGRESS
    assert all(ctx.heartbeat(m, 1) is E.UNKNOWN_MEMBER_ID for m in followers)


def test_leader_not_syncing_is_removed_and_parked_followers_get_rebalance_in_progress() -> None:  # #33
    ctx = GroupContext()
    leader, *followers = ctx.completing_group(3, rebalance_ms=5000, session_ms=5000)
    parked = [ctx.sync(m, 1) for m in followers]
    ctx.sleep(2500)
    assert all(ctx.heartbeat(m, 1) is E.NONE for m in [leader, *followers])
    ctx.sleep(2500)
    assert all(p.error is E.REBALANCE_IN_PROGRESS for p in parked)
    assert all(ctx.heartbeat(m, 1) is E.REBALANCE_IN_PROGRESS for m in followers)
    assert ctx.heartbeat(leader, 1) is E.UNKNOWN_MEMBER_ID
    assert ctx.state() == "PreparingRebalance"


def test_no_pending_sync_timeout_once_everyone_synced() -> None:  # 18.4 #34
    ctx = GroupContext()
    ids = ctx.completing_group(3, rebalance_ms=5000, session_ms=5000)
    assert all(r.error is E.NONE for r in ctx.sync_all(ids).values())
    for _ in range(2):
        ctx.sleep(2500)
        assert all(ctx.heartbeat(m, 1) is E.NONE for m in ids)
    assert ctx.state() == "Stable"


def test_leader_resending_sync_in_stable_gets_the_stored_assignment() -> None:  # §8.1 rule 12
    ctx = GroupContext()
    [m] = ctx.stable_group(1)
    r = ctx.sync(m, 1, assignments={m: b"other"}).result
    assert (r.error, r.assignment) == (E.NONE, m.encode())


def test_generation_snapshot_is_recorded_after_each_completed_sync() -> None:
    ctx = GroupContext()
    leader, follower = ctx.stable_group(2)
    snap = ctx.records_of(GenerationSnapshot)[-1]
    assert snap.generation == 1 and snap.leader_id == leader
    assert {m.member_id: m.assignment for m in snap.members} == {leader: leader.encode(),
                                                                 follower: follower.encode()}
