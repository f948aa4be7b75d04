from __future__ import annotations

import pytest

from rebalance_lab.clients.assignors.types import TopicPartition
from rebalance_lab.clients.member import calls as c
from rebalance_lab.clients.member.state import IllegalTransition, Phase
from rebalance_lab.protocol import consumer_protocol as cp
from rebalance_lab.protocol.errors import ErrorCode as E

from .member_helpers import assignment_bytes, joined, make_state, stable


def test_first_join_sends_an_empty_member_id_and_one_protocol_per_assignor() -> None:
    state = make_state(("range", "roundrobin"))
    call = state.start_join()
    assert call.member_id == ""
    assert [name for name, _ in call.protocols] == ["range", "roundrobin"]
    assert cp.decode_subscription(call.protocols[0][1]).topics == ("t",)
    assert state.phase is Phase.JOINING


def test_member_id_required_is_answered_by_a_second_join_with_that_id() -> None:
    state = make_state()
    state.start_join()
    step = state.on_join_result(c.JoinGroupResult(E.MEMBER_ID_REQUIRED, "client-abc"))
    assert isinstance(step, c.SendJoin)
    assert step.call.member_id == "client-abc"
    assert state.phase is Phase.JOINING


def test_follower_syncs_with_no_assignments_then_becomes_stable() -> None:
    state = make_state()
    state.start_join()
    step = state.on_join_result(joined("me", "other", generation=3))
    assert isinstance(step, c.SendSync)
    assert step.call == c.SyncGroupCall(3, "me", None, "consumer", "range", ())
    done = state.on_sync_result(c.SyncGroupResult(E.NONE, assignment_bytes(("t", 1)), "range"))
    assert isinstance(done, c.Assigned)
    assert done.partitions == (TopicPartition("t", 1),)
    assert (state.phase, state.generation_id, state.is_leader) == (Phase.STABLE, 3, False)


def test_leader_runs_the_assignor_before_syncing() -> None:
    state = make_state()
    state.start_join()
    members = (c.JoinedMember("me", None, b"x"), c.JoinedMember("other", None, b"y"))
    step = state.on_join_result(joined("me", "me", members=members))
    assert isinstance(step, c.RunAssignor)
    assert step.members == members and state.phase is Phase.ASSIGNING
    call = state.on_assignment({"me": b"a", "other": b"b"})
    assert call.assignments == (("me", b"a"), ("other", b"b"))
    assert state.phase in (Phase.SYNCING,)


def test_static_leader_told_to_skip_assignment_syncs_without_assignments() -> None:
    state = make_state(instance="inst-1")
    call = state.start_join()
    assert call.group_instance_id == "inst-1"
    step = state.on_join_result(joined("me", "me", skip_assignment=True))
    assert isinstance(step, c.SendSync)
    assert step.call.assignments == () and step.call.group_instance_id == "inst-1"


def test_unknown_member_id_on_join_forgets_the_id() -> None:
    state = make_state()
    state.start_join()
    state.on_join_result(c.JoinGroupResult(E.MEMBER_ID_REQUIRED, "m-1"))
    step = state.on_join_result(c.JoinGroupResult(E.UNKNOWN_MEMBER_ID, "m-1"))
    assert isinstance(step, c.SendJoin) and step.call.member_id == ""


@pytest.mark.parametrize("error", [E.COORDINATOR_NOT_AVAILABLE, E.NOT_COORDINATOR])
def test_coordinator_errors_on_join_ask_for_rediscovery(error: E) -> None:
    state = make_state()
    state.start_join()
    assert state.on_join_result(c.JoinGroupResult(error, "")) == c.Rediscover(error)
    assert state.join_call().member_id == ""


@pytest.mark.parametrize("error", [E.REBALANCE_IN_PROGRESS, E.COORDINATOR_LOAD_IN_PROGRESS])
def test_transient_join_errors_are_retried(error: E) -> None:
    state = make_state()
    state.start_join()
    assert state.on_join_result(c.JoinGroupResult(error, "")) == c.Retry(error)
    assert state.phase is Phase.JOINING


@pytest.mark.parametrize(
    "error", [E.INCONSISTENT_GROUP_PROTOCOL, E.INVALID_SESSION_TIMEOUT, E.FENCED_INSTANCE_ID, E.GROUP_MAX_SIZE_REACHED]
)
def test_fatal_join_errors_fail_the_member_for_good(error: E) -> None:
    state = make_state()
    state.start_join()
    assert state.on_join_result(c.JoinGroupResult(error, "")) == c.Failed(error)
    assert state.phase is Phase.FAILED and state.failure == error
    with pytest.raises(IllegalTransition):
        state.start_join()


def test_sync_rebalance_in_progress_rejoins_with_the_same_member_id() -> None:
    state = make_state()
    state.start_join()
    state.on_join_result(joined("me", "other", generation=2))
    step = state.on_sync_result(c.SyncGroupResult(E.REBALANCE_IN_PROGRESS))
    assert isinstance(step, c.SendJoin) and step.call.member_id == "me"
    assert state.phase is Phase.JOINING


def test_sync_illegal_generation_keeps_the_member_id_but_drops_the_generation() -> None:
    state = make_state()
    state.start_join()
    state.on_join_result(joined("me", "other", generation=2))
    step = state.on_sync_result(c.SyncGroupResult(E.ILLEGAL_GENERATION))
    assert isinstance(step, c.SendJoin) and step.call.member_id == "me"
    assert state.generation_id == -1
    assert cp.decode_subscription(step.call.protocols[0][1]).generation_id is None


def test_sync_unknown_member_id_forgets_the_member_id() -> None:
    state = make_state()
    state.start_join()
    state.on_join_result(joined("me", "other"))
    step = state.on_sync_result(c.SyncGroupResult(E.UNKNOWN_MEMBER_ID))
    assert isinstance(step, c.SendJoin) and step.call.member_id == ""


def test_sync_fenced_instance_is_fatal() -> None:
    state = make_state(instance="i")
    state.start_join()
    state.on_join_result(joined("me", "other"))
    assert state.on_sync_result(c.SyncGroupResult(E.FENCED_INSTANCE_ID)) == c.Failed(E.FENCED_INSTANCE_ID)


def test_a_response_in_the_wrong_phase_raises_and_changes_nothing() -> None:
    state = make_state()
    state.start_join()
    with pytest.raises(IllegalTransition):
        state.on_sync_result(c.SyncGroupResult(E.NONE))
    with pytest.raises(IllegalTransition):
        state.on_assignment({})
    assert state.phase is Phase.JOINING


def test_heartbeats_are_only_due_while_stable() -> None:
    state = make_state()
    assert state.heartbeat_call() is None
    state.start_join()
    assert state.heartbeat_call() is None
    stable(state, "me", generation=4)
    assert state.heartbeat_call() == c.HeartbeatCall(4, "me", None)


def test_heartbeat_rebalance_in_progress_asks_for_a_rejoin_and_keeps_the_generation() -> None:
    state = make_state()
    stable(state, "me")
    call = state.heartbeat_call()
    assert call is not None
    assert state.on_heartbeat_result(call, c.HeartbeatResult(E.NONE)) == c.HeartbeatOk()
    assert state.on_heartbeat_result(call, c.HeartbeatResult(E.REBALANCE_IN_PROGRESS)) == c.RejoinNeeded(
        E.REBALANCE_IN_PROGRESS
    )
    assert (state.phase, state.generation_id) == (Phase.STABLE, 1)
    assert state.start_join().member_id == "me"


def test_heartbeat_illegal_generation_resets_the_generation_only() -> None:
    state = make_state()
    stable(state, "me")
    call = state.heartbeat_call()
    assert call is not None
    step = state.on_heartbeat_result(call, c.HeartbeatResult(E.ILLEGAL_GENERATION))
    assert step == c.RejoinNeeded(E.ILLEGAL_GENERATION)
    assert (state.phase, state.member_id, state.generation_id) == (Phase.UNJOINED, "me", -1)


def test_heartbeat_unknown_member_id_resets_the_member_id() -> None:
    state = make_state()
    stable(state, "me")
    call = state.heartbeat_call()
    assert call is not None
    state.on_heartbeat_result(call, c.HeartbeatResult(E.UNKNOWN_MEMBER_ID))
    assert (state.phase, state.member_id) == (Phase.UNJOINED, "")


def test_a_heartbeat_answer_for_an_older_generation_is_ignored() -> None:
    state = make_state()
    stable(state, "me", generation=1)
    old = state.heartbeat_call()
    assert old is not None
    state.start_join()
    state.on_join_result(joined("me", "other", generation=2))
    state.on_sync_result(c.SyncGroupResult(E.NONE, b"", "range"))
    assert isinstance(state.on_heartbeat_result(old, c.HeartbeatResult(E.ILLEGAL_GENERATION)), c.Ignored)
    assert state.phase is Phase.STABLE


def test_heartbeat_coordinator_loss_asks_for_rediscovery() -> None:
    state = make_state()
    stable(state, "me")
    call = state.heartbeat_call()
    assert call is not None
    assert state.on_heartbeat_result(call, c.HeartbeatResult(E.NOT_COORDINATOR)) == c.Rediscover(E.NOT_COORDINATOR)


def test_an_empty_assignment_means_no_partitions() -> None:
    state = make_state()
    done = stable(state, "me")
    assert done.partitions == () and state.owned == ()


def test_eager_member_revokes_everything_before_rejoining() -> None:
    state = make_state(("range",))
    stable(state, "me", ("t", 0), ("t", 1))
    call = state.start_join()
    subscription = cp.decode_subscription(call.protocols[0][1])
    assert subscription.owned_partitions == () and subscription.generation_id == 1
    state.on_join_result(joined("me", "other", generation=2))
    done = state.on_sync_result(c.SyncGroupResult(E.NONE, assignment_bytes(("t", 1)), "range"))
    assert isinstance(done, c.Assigned)
    assert done.revoked == (TopicPartition("t", 0), TopicPartition("t", 1))
    assert done.added == (TopicPartition("t", 1),) and not done.rejoin_needed


def test_cooperative_member_lists_owned_partitions_and_its_generation() -> None:
    state = make_state(("cooperative-sticky",))
    stable(state, "me", ("t", 0), ("t", 1), generation=5)
    call = state.start_join()
    subscription = cp.decode_subscription(call.protocols[0][1])
    assert subscription.owned_partitions == (TopicPartition("t", 0), TopicPartition("t", 1))
    assert subscription.generation_id == 5
    assert cp.decode_cooperative_user_data(subscription.user_data) == 5


def test_cooperative_member_revokes_only_lost_partitions_and_then_rejoins() -> None:
    state = make_state(("cooperative-sticky",))
    stable(state, "me", ("t", 0), ("t", 1))
    state.start_join()
    state.on_join_result(joined("me", "other", generation=2, protocol="cooperative-sticky"))
    done = state.on_sync_result(c.SyncGroupResult(E.NONE, assignment_bytes(("t", 1), ("t", 2)), None))
    assert isinstance(done, c.Assigned)
    assert done.revoked == (TopicPartition("t", 0),)
    assert done.added == (TopicPartition("t", 2),)
    assert done.rejoin_needed


def test_cooperative_member_with_nothing_revoked_does_not_rejoin() -> None:
    state = make_state(("cooperative-sticky",))
    stable(state, "me", ("t", 0))
    state.start_join()
    state.on_join_result(joined("me", "other", generation=2, protocol="cooperative-sticky"))
    done = state.on_sync_result(c.SyncGroupResult(E.NONE, assignment_bytes(("t", 0), ("t", 1)), None))
    assert isinstance(done, c.Assigned) and not done.rejoin_needed and done.revoked == ()


def test_cooperative_member_whose_generation_was_reset_loses_all_partitions() -> None:
    state = make_state(("cooperative-sticky",))
    stable(state, "me", ("t", 0))
    call = state.heartbeat_call()
    assert call is not None
    state.on_heartbeat_result(call, c.HeartbeatResult(E.UNKNOWN_MEMBER_ID))
    join = state.start_join()
    assert cp.decode_subscription(join.protocols[0][1]).owned_partitions == ()


def test_leave_sends_the_current_identity_and_resets_the_member() -> None:
    state = make_state(instance="inst")
    stable(state, "me", ("t", 0))
    assert state.leave_call("bye") == c.LeaveGroupCall("me", "inst", "bye")
    assert (state.phase, state.member_id, state.owned) == (Phase.UNJOINED, "", ())
    assert state.leave_call() is None


def test_raw_protocols_are_sent_verbatim() -> None:
    from rebalance_lab.clients.member.state import MemberState

    state = MemberState(session_timeout_ms=6000, rebalance_timeout_ms=6000, protocols=(("custom", b"\x01"),))
    assert state.start_join().protocols == (("custom", b"\x01"),)
    with pytest.raises(ValueError):
        MemberState(session_timeout_ms=6000, rebalance_timeout_ms=6000)
