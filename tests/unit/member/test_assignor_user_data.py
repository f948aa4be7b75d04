"""The assignor user data a light member sends is what Java's assignors keep from ``onAssignment``:
the last assignment received and its generation (spec assignors.md §1.8), not the partitions the
member owns when it joins (none, for an eager member) nor the generation it last joined."""

from __future__ import annotations

from rebalance_lab.clients.assignors.types import TopicPartition
from rebalance_lab.clients.member import calls as c
from rebalance_lab.protocol import consumer_protocol as cp
from rebalance_lab.protocol.errors import ErrorCode as E

from .member_helpers import joined, make_state, stable


def sticky_data(call: c.JoinGroupCall) -> cp.StickyMemberData:
    return cp.decode_sticky_user_data(cp.decode_subscription(dict(call.protocols)["sticky"]).user_data)


def test_an_eager_sticky_member_sends_its_previous_assignment_although_it_revoked_it() -> None:
    state = make_state(("sticky",))
    stable(state, "m-1", ("t", 0), ("t", 2), generation=4)
    call = state.start_join()
    assert cp.decode_subscription(call.protocols[0][1]).owned_partitions == ()  # eager: all revoked
    assert sticky_data(call) == cp.StickyMemberData((TopicPartition("t", 0), TopicPartition("t", 2)), 4)


def test_after_a_generation_that_never_synced_the_user_data_keeps_the_assigned_generation() -> None:
    state = make_state(("sticky",))
    stable(state, "m-1", ("t", 1), generation=4)
    state.start_join()
    state.on_join_result(joined("m-1", "other", generation=5))
    step = state.on_sync_result(c.SyncGroupResult(E.REBALANCE_IN_PROGRESS))  # generation 5 is interrupted
    assert isinstance(step, c.SendJoin)
    subscription = cp.decode_subscription(step.call.protocols[0][1])
    assert subscription.generation_id == 5  # the protocol field: the generation last joined
    assert sticky_data(step.call) == cp.StickyMemberData((TopicPartition("t", 1),), 4)


def test_cooperative_user_data_carries_the_generation_of_the_last_assignment() -> None:
    state = make_state(("cooperative-sticky",))
    stable(state, "m-1", ("t", 1), generation=4)
    state.start_join()
    state.on_join_result(joined("m-1", "other", generation=5))
    step = state.on_sync_result(c.SyncGroupResult(E.REBALANCE_IN_PROGRESS))
    assert isinstance(step, c.SendJoin)
    subscription = cp.decode_subscription(step.call.protocols[0][1])
    assert subscription.owned_partitions == (TopicPartition("t", 1),)
    assert cp.decode_cooperative_user_data(subscription.user_data) == 4


def test_a_member_that_left_starts_again_with_no_user_data() -> None:
    state = make_state(("sticky",))
    stable(state, "m-1", ("t", 0), generation=2)
    state.leave_call()
    assert sticky_data(state.start_join()) == cp.StickyMemberData((), None)
