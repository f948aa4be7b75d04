"""Leaving, session and rebalance timeouts (spec/kip848.md §5.5-5.6, §6.3, §10 #24, #32-33; 4.4.0)."""

from __future__ import annotations

from rebalance_lab.protocol.errors import ErrorCode

from .context import Ctx, foo, kinds

E = ErrorCode


def test_a_leave_bumps_the_epoch_and_the_next_heartbeat_takes_everything() -> None:
    """#24."""
    ctx = Ctx()
    ctx.stable_pair()
    r = ctx.leave("B")
    assert (r.error, r.member_id, r.member_epoch, r.heartbeat_interval_ms, r.assignment) == (E.NONE, "B", -1, 0, None)
    view = ctx.view()
    assert (view.group_epoch, view.state) == (4, "Assigning")
    ctx.advance(1_000)
    r = ctx.hb("A", 3)
    assert (r.member_epoch, ctx.names(r.assignment)) == (4, foo(0, 1, 2, 3, 4, 5))


def test_a_silent_member_is_fenced_when_its_session_expires() -> None:
    """#32."""
    ctx = Ctx()
    ctx.join("A")
    assert ctx.advance(44_999) == []
    fired = ctx.advance(1)
    assert kinds(fired) == ["MemberFenced", "GroupEpochBumped", "TargetAssignmentComputed"]
    assert fired[0].reason == "the member session expired"  # type: ignore[attr-defined]
    view = ctx.view()
    assert (view.state, view.group_epoch, view.assignment_epoch) == ("Empty", 3, 3)
    r = ctx.hb("A", 2)
    assert (r.error, r.error_message) == (E.UNKNOWN_MEMBER_ID, "Member A is not a member of group g.")


def test_every_heartbeat_pushes_the_session_back() -> None:
    ctx = Ctx()
    ctx.join("A")
    ctx.advance(40_000)
    ctx.hb("A", 2)
    assert ctx.advance(40_000) == []


def test_a_failed_heartbeat_does_not_extend_the_session() -> None:
    ctx = Ctx()
    ctx.join("A")
    ctx.advance(40_000)
    assert ctx.hb("A", 9).error == E.FENCED_MEMBER_EPOCH
    assert kinds(ctx.advance(5_000))[0] == "MemberFenced"


def test_a_member_that_does_not_revoke_in_time_is_fenced() -> None:
    """#33."""
    ctx = Ctx()
    ctx.join("A", rebalance_timeout_ms=5_000)
    ctx.advance(1_000)
    ctx.join("B")
    ctx.ack("A", 2, foo(0, 1, 2, 3, 4, 5))
    fired = ctx.advance(5_000)
    assert kinds(fired)[:2] == ["MemberFenced", "GroupEpochBumped"]
    assert fired[0].reason == "it failed to transition from epoch 2 within 5000ms"  # type: ignore[attr-defined]
    assert ctx.view().member("A") is None and ctx.view().group_epoch == 4


def test_revoking_in_time_cancels_the_rebalance_timeout() -> None:
    ctx = Ctx()
    ctx.join("A", rebalance_timeout_ms=5_000)
    ctx.advance(1_000)
    ctx.join("B")
    ctx.ack("A", 2, foo(0, 1, 2, 3, 4, 5))
    ctx.ack("A", 2, foo(0, 1, 2))
    ctx.advance(4_000)
    ctx.hb("B", 3)
    assert [k for k in kinds(ctx.advance(2_000)) if k == "MemberFenced"] == []


def test_the_last_member_leaving_leaves_an_empty_group_that_assigns_at_once() -> None:
    ctx = Ctx()
    ctx.join("A")
    ctx.leave("A")
    view = ctx.view()
    assert (view.state, view.group_epoch, view.assignment_epoch) == ("Empty", 3, 3)
    r = ctx.join("B")
    assert (r.member_epoch, ctx.names(r.assignment)) == (4, foo(0, 1, 2, 3, 4, 5))


def test_the_operator_can_fence_a_member_and_bump_the_epoch() -> None:
    ctx = Ctx()
    ctx.stable_pair()
    ctx.coordinator.fence_member(ctx.now, "g", "B", ctx.topics)
    assert ctx.view().member("B") is None and ctx.view().group_epoch == 4
    ctx.coordinator.bump_epoch(ctx.now, "g")
    assert ctx.view().state == "Assigning" and ctx.view().group_epoch == 5
