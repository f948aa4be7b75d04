"""The coordinator's operator entry points, sans-I/O: force a rebalance, expire a member now."""

from __future__ import annotations

import pytest

from rebalance_lab.coordinator.classic.admin import AdminError, NotFound
from rebalance_lab.coordinator.classic.records import MemberExpired, RebalancePrepared
from rebalance_lab.protocol.errors import ErrorCode
from tests.unit.coordinator.group_context import GroupContext


def test_forcing_a_rebalance_moves_a_stable_group_to_preparing_and_members_learn_it_on_heartbeat() -> None:
    ctx = GroupContext()
    _leader, follower = ctx.stable_group(2)
    ctx._apply(ctx.coordinator.force_rebalance(ctx.now, "g", "test"))
    assert ctx.state() == "PreparingRebalance"
    prepared = ctx.records_of(RebalancePrepared)[-1]
    assert (prepared.reason, prepared.reason_code, prepared.from_state) == ("test", "forced", "Stable")
    assert ctx.heartbeat(follower, 1) is ErrorCode.REBALANCE_IN_PROGRESS


def test_forcing_a_rebalance_of_an_unknown_or_rebalancing_group_is_refused() -> None:
    ctx = GroupContext()
    with pytest.raises(NotFound, match="no group"):
        ctx.coordinator.force_rebalance(ctx.now, "nope")
    ctx.stable_group(1)
    ctx._apply(ctx.coordinator.force_rebalance(ctx.now, "g"))
    with pytest.raises(AdminError, match="PreparingRebalance"):
        ctx.coordinator.force_rebalance(ctx.now, "g")


def test_expiring_a_member_now_removes_it_as_a_session_timeout_would_and_rebalances() -> None:
    ctx = GroupContext()
    leader, follower = ctx.stable_group(2)
    ctx._apply(ctx.coordinator.expire_member(ctx.now, "g", follower))
    expired = ctx.records_of(MemberExpired)[-1]
    assert (expired.member_id, expired.cause) == (follower, "session_timeout")
    assert ctx.view().member_ids == (leader,)
    assert ctx.state() == "PreparingRebalance"
    assert ctx.heartbeat(follower, 1) is ErrorCode.UNKNOWN_MEMBER_ID


def test_a_member_waiting_in_a_join_is_not_expired_as_in_kafka() -> None:
    ctx = GroupContext()
    leader, _follower = ctx.stable_group(2)
    ctx._apply(ctx.coordinator.force_rebalance(ctx.now, "g"))
    ctx.join(leader, version=3)  # parks: the follower has not rejoined yet
    with pytest.raises(AdminError, match="waiting"):
        ctx.coordinator.expire_member(ctx.now, "g", leader)
    with pytest.raises(NotFound, match="no member"):
        ctx.coordinator.expire_member(ctx.now, "g", "ghost")
