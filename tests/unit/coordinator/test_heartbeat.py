"""Heartbeat, session timeouts, pending members (spec §9, §18.5; traps §16.8-9, §16.17)."""

from __future__ import annotations

from rebalance_lab.coordinator.classic.records import MemberExpired, PendingMemberExpired
from rebalance_lab.protocol.errors import ErrorCode

from .group_context import GroupContext

E = ErrorCode


def test_heartbeat_answers_in_each_state() -> None:  # 18.5 #35
    ctx = GroupContext()
    assert ctx.heartbeat("m", 1, group="unknown") is E.UNKNOWN_MEMBER_ID
    leader, follower = ctx.completing_group(2)
    assert ctx.heartbeat("unknown", 1) is E.UNKNOWN_MEMBER_ID
    assert ctx.heartbeat(leader, 1) is E.NONE  # CompletingRebalance
    assert ctx.heartbeat(leader, 2) is E.ILLEGAL_GENERATION
    ctx.sync_all([leader, follower])
    assert ctx.heartbeat(follower, 1) is E.NONE  # Stable
    ctx.join(leader)
    assert ctx.heartbeat(follower, 1) is E.REBALANCE_IN_PROGRESS


def test_heartbeat_in_preparing_rebalance_of_generation_zero_is_rebalance_in_progress() -> None:  # 18.5 #35
    ctx = GroupContext()
    call = ctx.join(version=3)
    member_id = ctx.view().member_ids[0]
    assert not call.done
    assert ctx.heartbeat(member_id, 0) is E.REBALANCE_IN_PROGRESS


def test_member_without_heartbeats_expires_and_the_group_goes_empty_at_the_next_generation() -> None:  # #36
    ctx = GroupContext()
    [m] = ctx.stable_group(1, session_ms=5000)
    ctx.sleep(4999)
    assert ctx.view().member_ids == (m,)
    ctx.sleep(1)
    view = ctx.view()
    assert (view.state, view.generation_id) == ("Empty", 2)
    assert ctx.heartbeat(m, 1) is E.UNKNOWN_MEMBER_ID
    assert ctx.records_of(MemberExpired)[-1].cause == "session_timeout"


def test_heartbeats_keep_the_member_alive() -> None:  # 18.5 #37
    ctx = GroupContext()
    [m] = ctx.stable_group(1, session_ms=5000)
    ctx.sleep(2500)
    assert ctx.heartbeat(m, 1) is E.NONE
    ctx.sleep(2500)
    assert ctx.heartbeat(m, 1) is E.NONE
    assert ctx.view().member_ids == (m,)


def test_expiry_during_a_rebalance_completes_the_join_at_once() -> None:  # 18.5 #38
    ctx = GroupContext()
    [leader] = ctx.stable_group(1, session_ms=5000)
    m = ctx.join(version=3, rebalance_ms=10_000, session_ms=5000)
    ctx.sleep(2500)
    assert ctx.heartbeat(leader, 1) is E.REBALANCE_IN_PROGRESS  # resets the timer to +5000
    ctx.sleep(4999)
    assert not m.done
    ctx.sleep(1)
    r = m.result
    assert (r.error, r.generation_id, r.leader) == (E.NONE, 2, r.member_id)
    assert ctx.view().member_ids == (r.member_id,) and ctx.state() == "CompletingRebalance"
    assert ctx.heartbeat(leader, 1) is E.UNKNOWN_MEMBER_ID


def test_pending_member_expires_after_its_session_timeout() -> None:  # 18.5 #39
    ctx = GroupContext()
    pending = ctx.join(version=4, session_ms=1000).result.member_id
    ctx.sleep(1000)
    assert ctx.view().pending_members == ()
    assert ctx.join(pending, version=4).error is E.UNKNOWN_MEMBER_ID
    assert ctx.records_of(PendingMemberExpired)[-1].member_id == pending


def test_parked_new_member_is_evicted_after_five_minutes_whatever_its_session_timeout() -> None:  # #40, trap 8
    ctx = GroupContext()
    [a] = ctx.stable_group(1, session_ms=305_000, rebalance_ms=600_000)
    ctx.join(a, session_ms=305_000, rebalance_ms=600_000)  # the leader rejoins: PreparingRebalance
    b = ctx.join(version=3, session_ms=5000, rebalance_ms=600_000)
    new_id = next(m for m in ctx.view().member_ids if m != a)
    ctx.sleep(299_999)
    assert not b.done
    ctx.sleep(1)
    r = b.result
    assert (r.error, r.member_id) == (E.UNKNOWN_MEMBER_ID, "")
    assert new_id not in ctx.view().member_ids and a in ctx.view().member_ids
    assert ctx.records_of(MemberExpired)[-1].cause == "new_member_join_timeout"


def _rebalance_with_pending_member(ctx: GroupContext) -> tuple[str, str, str]:
    leader, follower = ctx.stable_group(2, session_ms=5000)
    ctx.join(leader, session_ms=5000)
    pending = ctx.join(version=4, session_ms=2500).result.member_id
    return leader, follower, pending


def test_join_completes_when_pending_member_times_out() -> None:  # 18.5 #41, trap 9
    ctx = GroupContext()
    _leader, follower, _pending = _rebalance_with_pending_member(ctx)
    f = ctx.join(follower, session_ms=5000)
    assert not f.done
    ctx.sleep(2500)
    assert f.error is E.NONE and len(ctx.view().members) == 2
    assert ctx.state() == "CompletingRebalance"


def test_join_completes_when_pending_member_joins() -> None:  # 18.5 #41
    ctx = GroupContext()
    _leader, follower, pending = _rebalance_with_pending_member(ctx)
    f = ctx.join(follower, session_ms=5000)
    p = ctx.join(pending, version=4, session_ms=2500)
    assert f.error is E.NONE and p.error is E.NONE
    assert len(ctx.view().members) == 3


def test_wrong_generation_heartbeat_does_not_reset_the_session_timer() -> None:  # trap 17
    ctx = GroupContext()
    [m] = ctx.stable_group(1, session_ms=5000)
    ctx.sleep(4000)
    assert ctx.heartbeat(m, 7) is E.ILLEGAL_GENERATION
    ctx.sleep(1000)
    assert ctx.view().members == ()


def test_java_sync_in_stable_does_not_reset_the_session_timer() -> None:  # §15 #7
    ctx = GroupContext()
    [m] = ctx.stable_group(1, session_ms=5000)
    ctx.sleep(4000)
    assert ctx.sync(m, 1).error is E.NONE
    ctx.sleep(1000)
    assert ctx.view().members == ()


def test_scala_sync_in_stable_resets_the_session_timer() -> None:  # §15 #7
    from rebalance_lab.config import Flavor

    ctx = GroupContext(Flavor.KAFKA_3)
    [m] = ctx.stable_group(1, session_ms=5000)
    ctx.sleep(4000)
    assert ctx.sync(m, 1).error is E.NONE
    ctx.sleep(1000)
    assert ctx.view().member_ids == (m,)


def test_rejoin_does_not_reset_the_session_timer_but_parking_protects_the_member() -> None:  # §9.2
    ctx = GroupContext()
    leader, _follower = ctx.stable_group(2, session_ms=5000, rebalance_ms=60_000)
    ctx.sleep(4000)
    parked = ctx.join(leader, session_ms=5000, rebalance_ms=60_000)
    ctx.sleep(1000)
    # Both timers fire: the parked leader is satisfied and kept; the idle follower is
    # removed, after which everyone left has joined, so the join completes at once.
    assert ctx.view().member_ids == (leader,)
    assert parked.result.generation_id == 2


def test_stale_pending_member_survives_join_completion_and_blocks_the_next_rebalance() -> None:  # §5.2, trap 9
    ctx = GroupContext()
    a = ctx.join(version=3, session_ms=60_000, rebalance_ms=60_000)
    pending = ctx.join(version=4, session_ms=20_000).result.member_id
    ctx.sleep(3000)  # the initial delay completes without checking pending members
    leader = a.result.member_id
    assert ctx.view().pending_members == (pending,)
    ctx.sync(leader, 1, assignments={})
    again = ctx.join(leader, session_ms=60_000, rebalance_ms=60_000)  # the leader rejoins: all members joined
    assert not again.done  # ... but the stale pending id blocks completion
    ctx.sleep(17_000)  # its own session timeout (20000 from t=0) removes it
    assert again.result.generation_id == 2
